package main

import (
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"time"
)

// newGateway returns the gateway handler: /healthz, /readyz and /metrics are
// its own, every other path is proxied to upstream. Every response carries
// X-Bookshop-Gateway; proxied responses keep the upstream pod's
// X-Bookshop-Pod and X-Bookshop-Version, responses the gateway makes itself
// (its probes, a 502) carry its own.
//
// Unless cfg.upstreamKeepAlive is set, each upstream request gets a fresh
// TCP connection, which kube-proxy routes afresh: a request routed to a pod
// that has just died fails with a 502 here. A pooled connection would
// instead stick to a pod that is still alive and hide the dropped request.
//
// The gateway gives up on an upstream sooner than a client does (dial
// timeout cfg.upstreamDialTimeout, response headers cfg.upstreamTimeout):
// a connection to a dead pod's IP gets no answer at all, and a proxy that
// waited longer than its client would turn every 502 into the client's own
// timeout.
func newGateway(cfg config, id identity, life *lifecycle, m *metrics, log *slog.Logger) http.Handler {
	upstream := cfg.upstream
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.DisableKeepAlives = !cfg.upstreamKeepAlive
	transport.DialContext = (&net.Dialer{Timeout: cfg.upstreamDialTimeout, KeepAlive: 30 * time.Second}).DialContext
	transport.ResponseHeaderTimeout = cfg.upstreamTimeout
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upstream)
			pr.SetXForwarded()
		},
		Transport: transport,
		ModifyResponse: func(resp *http.Response) error {
			// An upstream that is not a bookshop: attribute the response to us.
			if resp.Header.Get(headerPod) == "" {
				resp.Header.Set(headerPod, id.pod)
				resp.Header.Set(headerVersion, id.version)
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			log.Warn("upstream error", "method", r.Method, "path", r.URL.Path, "upstream", upstream.String(), "err", err.Error())
			w.Header().Set(headerPod, id.pod)
			w.Header().Set(headerVersion, id.version)
			http.Error(w, "bad gateway: upstream unavailable", http.StatusBadGateway)
		},
	}

	mux := http.NewServeMux()
	addProbes(mux, id, life, m)
	mux.Handle("/", m.instrument("proxy", proxy))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(headerGateway, id.pod)
		mux.ServeHTTP(w, r)
	})
}
