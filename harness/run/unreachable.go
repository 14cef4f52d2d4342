package run

import (
	"fmt"
	"sync/atomic"

	"github.com/droprun/droprun/harness/traffic"
)

// A control window in which most requests fail does not measure a race:
// the target is unreachable or broken (a Service name no pod resolves, a
// wrong port, an app that answers 5xx). Its rollouts would only repeat the
// failures for minutes; the run stops before them instead, saying which
// target failed and how.
const (
	// UnreachableShare is the share of a control window's requests that,
	// failing, stops the run.
	UnreachableShare = 0.5
	// minControlRequests is the fewest requests a control window must
	// have sent for its share to say anything.
	minControlRequests = 20
)

// firstFailure keeps the first failed request a load source reported.
type firstFailure struct {
	p atomic.Pointer[traffic.Record]
}

// note keeps rec when it is the first failure.
func (f *firstFailure) note(rec traffic.Record) {
	if rec.Class.Failed() && f.p.Load() == nil {
		f.p.CompareAndSwap(nil, &rec)
	}
}

// unreachable returns the error that stops the run when failed of sent
// control-window requests show the target unreachable or broken, else
// nil. first is the first failure seen, nil for none.
func unreachable(variant string, sent, failed uint64, first *traffic.Record) error {
	if sent < minControlRequests || float64(failed) <= UnreachableShare*float64(sent) {
		return nil
	}
	why := ""
	if first != nil {
		why = fmt.Sprintf("; the first: %s to %s: %s", first.Class, first.URL, first.Error)
	}
	return fmt.Errorf("variant %s: %d of %d requests failed in the control window, before any rollout: the target is unreachable or broken, so its rollouts would measure nothing%s (stopped before its rollouts; what was recorded is kept)",
		variant, failed, sent, why)
}
