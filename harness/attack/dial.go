package attack

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
)

// dialFunc is the signature of net.Dialer.DialContext.
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// guardDial wraps dial so that it refuses every address not in allowed. The
// target URLs never change, redirects are not followed and no proxy is used,
// so this never fires; it is the last line that keeps load on loopback.
// allowed is short (one address per node), so a linear search is cheapest.
func guardDial(dial dialFunc, allowed []string) dialFunc {
	allowed = slices.Clone(allowed)
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if !slices.Contains(allowed, addr) {
			return nil, fmt.Errorf("traffic: refusing to dial %s %s: this client only connects to %s", network, addr, strings.Join(allowed, ", "))
		}
		return dial(ctx, network, addr)
	}
}
