package traffic

import (
	"strings"
	"testing"
)

func TestParseAllowTarget(t *testing.T) {
	tests := []struct {
		in   string
		want AllowTarget
		err  string
	}{
		{"shop.example.com", AllowTarget{Host: "shop.example.com"}, ""},
		{"Shop.Example.com:8080", AllowTarget{Host: "shop.example.com", Port: "8080"}, ""},
		{"203.0.113.7:80", AllowTarget{Host: "203.0.113.7", Port: "80"}, ""},
		{"[2001:db8::1]:443", AllowTarget{Host: "2001:db8::1", Port: "443"}, ""},
		{"[2001:db8::1]", AllowTarget{Host: "2001:db8::1"}, ""},
		{"", AllowTarget{}, "is empty"},
		{"http://shop.example.com", AllowTarget{}, "no scheme, path or user"},
		{"shop.example.com/api", AllowTarget{}, "no scheme, path or user"},
		{"shop.example.com:0", AllowTarget{}, `no port between 1 and 65535 (port "0")`},
		{"shop.example.com:080", AllowTarget{}, `no port between 1 and 65535`},
		{"shop.example.com:http", AllowTarget{}, `no port between 1 and 65535`},
		{"2001:db8::1", AllowTarget{}, "IPv6 address goes in brackets"},
		{":80", AllowTarget{}, "has no host"},
		{"127.0.0.1:30080", AllowTarget{}, "needs no permission"},
		{"localhost:30080", AllowTarget{}, "names loopback"},
		{"[::1]:30080", AllowTarget{}, "names loopback"},
		{"127.0.0.2", AllowTarget{}, "names loopback"},
		{"0.0.0.0:80", AllowTarget{}, "names loopback"},
	}
	for _, tc := range tests {
		got, err := ParseAllowTarget(tc.in)
		if tc.err == "" {
			if err != nil || got != tc.want {
				t.Errorf("ParseAllowTarget(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
			if again, err := ParseAllowTarget(got.String()); err != nil || again != got {
				t.Errorf("ParseAllowTarget(%q.String() = %q) = %+v, %v", tc.in, got.String(), again, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "HOST:PORT") {
			t.Errorf("ParseAllowTarget(%q) = %+v, %v; want an error containing %q and the form to use", tc.in, got, err, tc.err)
		}
	}
}
