package attack

import (
	"context"
	"io"

	"github.com/droprun/droprun/harness/traffic"
)

// StartHost starts the host client as a Source: cfg's load, every result
// written to out, observe called for every request.
func StartHost(ctx context.Context, cfg traffic.Config, out io.Writer, observe func(traffic.Record)) (traffic.Source, error) {
	a, err := Start(ctx, cfg, out, observe)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// Origin is HostOrigin: an Attack is the host client.
func (a *Attack) Origin() string { return traffic.HostOrigin }
