package analysis

import (
	"errors"
	"net"
	"os"
	"path/filepath"

	"github.com/droprun/droprun/harness/frontlog"
	"github.com/droprun/droprun/harness/jsonl"
)

// frontHop is what a front's access log says of one request: the front
// pod that handled it and the IP of the pod it sent it to ("" for none).
type frontHop struct{ pod, ip string }

// readFrontHops indexes, by request ID, the lines of frontlog.jsonl in
// which the front did not answer 2xx: those of the requests that can have
// failed (the client's failures are joined to them). Nil without the file.
func readFrontHops(dir string, sum *Summary) (map[string]frontHop, error) {
	f, err := os.Open(filepath.Join(dir, frontlog.File))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	hops := map[string]frontHop{}
	err = jsonl.Read(f, frontlog.File, func(l frontlog.Line) error {
		if l.RequestID == "" || l.Status >= 200 && l.Status < 300 {
			return nil
		}
		h := frontHop{pod: l.Pod}
		if host, _, err := net.SplitHostPort(l.Upstream); err == nil {
			h.ip = host
		}
		hops[l.RequestID] = h
		return nil
	})
	if err := warnTruncated(err, sum); err != nil {
		return nil, err
	}
	return hops, nil
}
