package main

import (
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
)

// newGateway returns the gateway handler: /healthz, /readyz and /metrics are
// its own, every other path is proxied to upstream. Every response carries
// X-Bookshop-Gateway; proxied responses keep the upstream pod's
// X-Bookshop-Pod and X-Bookshop-Version, responses the gateway makes itself
// (its probes, a 502) carry its own.
//
// Unless keepAlive is set, each upstream request gets a fresh TCP connection,
// which kube-proxy routes afresh: a request routed to a pod that has just
// died fails with a 502 here. A pooled connection would instead stick to a
// pod that is still alive and hide the dropped request.
func newGateway(upstream *url.URL, keepAlive bool, id identity, life *lifecycle, m *metrics, log *slog.Logger) http.Handler {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.DisableKeepAlives = !keepAlive
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
