package attack

import (
	"net"
	"net/http"
	"time"

	"github.com/droprun/droprun/harness/traffic"
)

// ProbeClient returns an HTTP client for single requests to targets (such
// as checking that each answers before a run) that keeps to them as an
// attack's client does: each target's URL is checked with traffic.CheckURL, the
// client uses no proxy, follows no redirect (a 3xx is the answer), and its
// dialer refuses every address but the targets'. It speaks HTTP/1.1 over a
// new connection per request, which bookshop answers whatever the
// protocol, except under traffic.ProtocolGRPC, whose targets answer gRPC only:
// then each request is a Check call on one channel per target. Call the
// returned func when done, to close those channels.
func ProbeClient(targets []traffic.Target, allow []traffic.AllowTarget, timeout time.Duration, p traffic.Protocol) (*http.Client, func(), error) {
	addrs, err := traffic.Config{Targets: targets, Allow: allow}.Addrs()
	if err != nil {
		return nil, nil, err
	}
	dial := guardDial((&net.Dialer{}).DialContext, addrs)
	var tr http.RoundTripper = &http.Transport{
		Proxy:             nil,
		DialContext:       dial,
		DisableKeepAlives: true,
	}
	done := func() {}
	if p == traffic.ProtocolGRPC {
		f, err := newGRPCFleet(addrs, 1, dial, nil)
		if err != nil {
			return nil, nil, err
		}
		tr, done = f, f.close
	}
	return &http.Client{
		Transport:     tr,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}, done, nil
}
