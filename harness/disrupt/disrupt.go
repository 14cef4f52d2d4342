package disrupt

import (
	"context"
	"fmt"
	"time"

	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/testbed/render"
)

// A Disruption prepares each round of a run.
type Disruption interface {
	// Round prepares round n (from 1), before the run reads the pods it
	// will take away.
	Round(n int) (Round, error)
}

// A Round is one round of a disruption, prepared and not yet begun.
type Round struct {
	// From and To name the pods' template before and after the round (a
	// rollout's versions).
	From, To string
	// Deployment is the Deployment whose pods the round takes away.
	Deployment string
	take       func(ctx context.Context) error
}

// Take takes the round's pods away and returns once they are gone (not
// when the Deployment says it is done: a pod still terminating still
// receives requests).
func (r Round) Take(ctx context.Context) error { return r.take(ctx) }

// Applier applies a Deployment and waits until it has rolled out and the
// pods it replaced are gone (testbed.Testbed.Rollout).
type Applier interface {
	Rollout(ctx context.Context, timeout time.Duration, objs ...any) error
}

// Rollout replaces a variant's pods by a rolling update, round n from
// scenario.Versions[(n-1)%2] to the other version, and back the next.
type Rollout struct {
	// Run is the scenario's name, for the change-cause annotation.
	Run     string
	Variant render.Variant
	Apply   Applier
	// Timeout turns a stuck rollout into a failure.
	Timeout time.Duration
}

// Round prepares rollout n: the variant rendered at the version it goes
// to, its change cause naming the run, the round and the versions.
func (r Rollout) Round(n int) (Round, error) {
	if n < 1 {
		return Round{}, fmt.Errorf("rollout %d: rounds count from 1", n)
	}
	to := n % 2
	from, name := scenario.Versions[1-to], r.Variant.Entry.Name
	cause := fmt.Sprintf("droprun %s: rollout %d of %s, %s→%s", r.Run, n, name, from, scenario.Versions[to])
	objs, err := r.Variant.Objects(to, false, cause)
	if err != nil {
		return Round{}, err
	}
	return Round{From: from, To: scenario.Versions[to], Deployment: *objs.Deployment.Name,
		take: func(ctx context.Context) error {
			return r.Apply.Rollout(ctx, r.Timeout, objs.Deployment)
		}}, nil
}
