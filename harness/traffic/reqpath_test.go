package traffic

import (
	"net/url"
	"strings"
	"testing"
)

// TestCheckPath: the paths a service is asked for pass; anything that
// could add a target, a query, a header or an argument is refused.
func TestCheckPath(t *testing.T) {
	for _, p := range []string{"/", "/version", "/api/v1/books;list", "/a-b_c.d~e/%2Fx", GRPCPath, "/@me:1/$&'()*+="} {
		if err := CheckPath(p); err != nil {
			t.Errorf("%q refused: %v", p, err)
		}
	}
	for p, want := range map[string]string{
		"":                                  "does not start with /",
		"version":                           "does not start with /",
		"/version,http://evil.example/":     `holds ','`,
		"/a b":                              `holds ' '`,
		"/a\nHost: evil":                    `holds '\n'`,
		"/a\x00":                            `holds '\x00'`,
		"/version?x=1":                      `holds '?'`,
		"/version#top":                      `holds '#'`,
		"/%zz":                              "not an escape",
		"/%4":                               "not an escape",
		"/ü":                                `holds 'ü'`,
		"/a\t--targets=http://evil.example": `holds '\t'`,
	} {
		if err := CheckPath(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error saying %s", p, err, want)
		}
	}
}

// FuzzCheckPath: a path CheckPath passes, put after any host, parses back
// as that one host and that path, with no query or fragment: it can never
// name a second place to send to.
func FuzzCheckPath(f *testing.F) {
	for _, s := range []string{"/version", "/a,b", "/a?b", "/%2C", "//evil.example/x", "/a@b:c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if CheckPath(p) != nil {
			return
		}
		if strings.ContainsAny(p, ", ?#\t\r\n") {
			t.Fatalf("%q passed", p)
		}
		u, err := url.Parse("http://10.0.0.1:30080" + p)
		if err != nil || u.Host != "10.0.0.1:30080" || u.RawQuery != "" || u.Fragment != "" || u.EscapedPath() == "" {
			t.Fatalf("%q after a host parses as %+v (%v)", p, u, err)
		}
	})
}
