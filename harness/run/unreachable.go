package run

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/droprun/droprun/harness/traffic"
)

// A control window in which most requests fail does not measure a race:
// the target is unreachable or broken (a Service name no pod resolves, a
// wrong port, an app that answers 5xx). Its rollouts would only repeat the
// failures for minutes; the run stops before them instead, saying which
// target failed and how. Two checks, both on the load the run sends:
//   - within seconds: a target (a load source's URL) whose first
//     ProbeRequests answers all failed stops the run at once;
//   - at the window's end: more than UnreachableShare of its requests
//     failed (of minControlRequests or more).
const (
	// ProbeRequests is how many of a target's first answers must all
	// have failed for the run to stop in the control window's first
	// seconds.
	ProbeRequests = 5
	// UnreachableShare is the share of a control window's requests that,
	// failing, stops the run.
	UnreachableShare = 0.5
	// minControlRequests is the fewest requests a control window must
	// have sent for its share to say anything.
	minControlRequests = 20
)

// reach watches a variant's control window: the first failure, and each
// target's first answers. note is called from the load sources' record
// callbacks; after close it keeps only the first failure.
type reach struct {
	first  atomic.Pointer[traffic.Record]
	closed atomic.Bool

	mu      sync.Mutex
	targets map[targetKey]*targetStart
	start   time.Time
	broken  chan error // the first target found broken; buffered, sent once
}

type targetKey struct{ origin, url string }

// targetStart counts a target's first answers.
type targetStart struct {
	answers, failed int
	first           traffic.Record // its first failure
}

func newReach() *reach {
	return &reach{targets: map[targetKey]*targetStart{}, start: time.Now(), broken: make(chan error, 1)}
}

// note takes one answer. An idle-closed connection is no verdict on the
// target (its server answered, then closed the idle connection), so it
// counts in neither check's first answers.
func (r *reach) note(rec traffic.Record) {
	failed := rec.Class.Failed()
	if failed && r.first.Load() == nil {
		r.first.CompareAndSwap(nil, &rec)
	}
	if r.closed.Load() || rec.Class == traffic.ClassIdleClosed {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k := targetKey{rec.Origin, rec.URL}
	t := r.targets[k]
	if t == nil {
		t = &targetStart{}
		r.targets[k] = t
	}
	if t.answers >= ProbeRequests {
		return
	}
	t.answers++
	if failed {
		if t.failed == 0 {
			t.first = rec
		}
		t.failed++
	}
	if t.failed == ProbeRequests {
		select {
		case r.broken <- r.brokenErr(k, t):
		default: // another target was first
		}
	}
}

func (r *reach) brokenErr(k targetKey, t *targetStart) error {
	from := ""
	if k.origin != traffic.HostOrigin && k.origin != "" {
		from = " from " + k.origin
	}
	return fmt.Errorf("the first %d requests to %s%s all failed, the first: %s: %s: the target is unreachable or broken, so its rollouts would measure nothing (stopped %s into the control window, before its rollouts; what was recorded is kept)",
		ProbeRequests, k.url, from, t.first.Class, t.first.Error, time.Since(r.start).Round(100*time.Millisecond))
}

// control holds the control window for d, or returns the first broken
// target's error as soon as one is found.
func (r *reach) control(ctx context.Context, d time.Duration) error {
	defer r.closed.Store(true)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case err := <-r.broken:
		return err
	case <-t.C:
		return nil
	}
}

// unreachable returns the error that stops the run when failed of sent
// control-window requests show the target unreachable or broken, else
// nil. first is the first failure seen, nil for none. The run names the
// variant before it.
func unreachable(sent, failed uint64, first *traffic.Record) error {
	if sent < minControlRequests || float64(failed) <= UnreachableShare*float64(sent) {
		return nil
	}
	why := ""
	if first != nil {
		why = fmt.Sprintf("; the first: %s to %s: %s", first.Class, first.URL, first.Error)
	}
	return fmt.Errorf("%d of %d requests failed in the control window, before any rollout: the target is unreachable or broken, so its rollouts would measure nothing%s (stopped before its rollouts; what was recorded is kept)",
		failed, sent, why)
}
