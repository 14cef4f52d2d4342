package run

import (
	"strings"
	"testing"

	"github.com/droprun/droprun/harness/traffic"
)

// TestUnreachable: a control window in which most requests failed stops
// the run before its rollouts, naming the first failure's target and
// error (a podinfo run once failed 2,415 of 2,415 control requests on a
// DNS error and went on for ten minutes); a window with a few failures, or
// too few requests to say, does not.
func TestUnreachable(t *testing.T) {
	var f firstFailure
	f.note(traffic.Record{Class: traffic.Class2xx})
	dns := traffic.Record{Class: traffic.ClassOther, URL: "http://web.droprun.svc.cluster.local.:80/version",
		Error: `dial tcp: lookup web.droprun.svc.cluster.local. on 10.96.0.10:53: no such host`}
	f.note(dns)
	f.note(traffic.Record{Class: traffic.ClassTimeout, Error: "later"})
	err := unreachable("podinfo", 2415, 2415, f.p.Load())
	if err == nil || !strings.Contains(err.Error(), "2415 of 2415 requests failed in the control window") || !strings.Contains(err.Error(), dns.URL+": "+dns.Error) {
		t.Errorf("every control request failed: %v", err)
	}
	for _, tc := range []struct{ sent, failed uint64 }{{1000, 500}, {1000, 3}, {10, 10}} {
		if err := unreachable("v", tc.sent, tc.failed, f.p.Load()); err != nil {
			t.Errorf("%d of %d failed: %v, want the run to go on", tc.failed, tc.sent, err)
		}
	}
}
