package traffic

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// AllowTarget is a host beyond 127.0.0.1 that the user named, with
// `droprun run --allow-target HOST[:PORT]`, as a place load may go: the
// load balancer or ingress in front of an existing cluster. Without a port
// it allows every port of Host; with one, that port only.
type AllowTarget struct {
	// Host is a DNS name or an IP address, as the target URL writes it
	// (lower case; an IPv6 address without brackets).
	Host string
	// Port is empty (any port) or a port number.
	Port string
}

// String returns HOST or HOST:PORT, as --allow-target takes it.
func (a AllowTarget) String() string {
	if a.Port == "" {
		if strings.Contains(a.Host, ":") {
			return "[" + a.Host + "]"
		}
		return a.Host
	}
	return net.JoinHostPort(a.Host, a.Port)
}

// ParseAllowTarget reads an --allow-target value: HOST or HOST:PORT (an
// IPv6 address in brackets), no scheme, path or user. 127.0.0.1 needs no
// permission, and the other names of loopback (localhost, ::1, 127.x) are
// refused, as every target URL refuses them.
func ParseAllowTarget(s string) (AllowTarget, error) {
	bad := func(why string) (AllowTarget, error) {
		return AllowTarget{}, fmt.Errorf("--allow-target %q %s: give the load balancer's or ingress's HOST or HOST:PORT exactly as the target URL has it, e.g. --allow-target shop.example.com:80", s, why)
	}
	if s == "" {
		return bad("is empty")
	}
	if strings.ContainsAny(s, "/@?# ") {
		return bad("is not a host (no scheme, path or user)")
	}
	host, port := s, ""
	if h, p, err := net.SplitHostPort(s); err == nil {
		host, port = h, p
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != p {
			return bad(fmt.Sprintf("has no port between 1 and 65535 (port %q)", p))
		}
	} else if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		host = s[1 : len(s)-1]
	} else if strings.Contains(s, ":") {
		return bad("is not HOST or HOST:PORT (an IPv6 address goes in brackets)")
	}
	host = strings.ToLower(host)
	if host == "" {
		return bad("has no host")
	}
	if host == LoopbackHost {
		return bad("names 127.0.0.1, which needs no permission")
	}
	if isLoopbackName(host) {
		return bad("names loopback: droprun's loopback target is written " + LoopbackHost)
	}
	return AllowTarget{Host: host, Port: port}, nil
}

// isLoopbackName reports whether host is a name or address of loopback
// other than LoopbackHost's spelling, or the unspecified address.
func isLoopbackName(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.TrimSuffix(host, "."))
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}

// allows reports whether a allows u, a URL whose host is not LoopbackHost:
// the same host, and the same port when a has one (the scheme's default
// port when u has none).
func (a AllowTarget) allows(u *url.URL) bool {
	if strings.ToLower(u.Hostname()) != a.Host {
		return false
	}
	return a.Port == "" || a.Port == urlPort(u)
}

// urlPort is u's port, or its scheme's default port.
func urlPort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}

// CheckURL checks raw as a target URL, as Config does for every target,
// and returns the address ("host:port") the client may dial for it. It is
// the one check between droprun and the network: every URL load or a
// readiness probe goes to passes through it (Start, ProbeClient).
//
// A URL on 127.0.0.1 is http://127.0.0.1:PORT/PATH. Any other host is
// refused unless allow names it (AllowTarget: the user's --allow-target);
// an allowed URL may be http or https and may leave out the port.
func CheckURL(raw string, allow []AllowTarget) (string, error) {
	return targetAddr("URL", raw, allow)
}
