package traffic

import (
	"strings"
	"testing"
)

func TestProtocol(t *testing.T) {
	for p, reuses := range map[Protocol]bool{"": false, ProtocolNewConnection: false, ProtocolKeepAlive: true} {
		if got := p.ReusesConnections(); got != reuses {
			t.Errorf("%q.ReusesConnections() = %v, want %v", p, got, reuses)
		}
		if err := (Config{URL: "http://127.0.0.1:1/", Rate: 1, Protocol: p}).Validate(); err != nil {
			t.Errorf("%q: %v", p, err)
		}
	}
	err := (Config{URL: "http://127.0.0.1:1/", Rate: 1, Protocol: "h3"}).Validate()
	if err == nil || !strings.Contains(err.Error(), `"h3"`) || !strings.Contains(err.Error(), string(ProtocolKeepAlive)) {
		t.Errorf("an unknown protocol: %v, want a refusal naming the known ones", err)
	}
	if got := ProtocolKeepAlive.Text(); got != "keep-alive connections" {
		t.Errorf("Text() = %q", got)
	}
}
