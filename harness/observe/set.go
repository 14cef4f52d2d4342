package observe

import (
	"context"
	"errors"
	"fmt"
)

// Observer is one of a run's watchers: the timeline recorder, the rule
// watch inside the nodes, the rig sampler, the pods' counters (and, next,
// the collector of generator pods' results). A run starts every observer
// before its first variant's traffic and stops them after the last, the
// same way for each.
type Observer struct {
	// Name says what it watches, for errors.
	Name string
	// Start starts it; the stop it returns ends it and reports what went
	// wrong while it watched. An observer that has nothing to watch here
	// (no route data on an existing cluster) returns a no-op stop.
	Start func(ctx context.Context) (stop func() error, err error)
}

// StartAll starts the observers in order (a later one may write through an
// earlier one, as every observer writes through the timeline recorder) and
// returns the function that stops them in reverse order, joining their
// errors. When one fails to start, those already started are stopped and
// its error is returned.
func StartAll(ctx context.Context, observers []Observer) (stopAll func() error, err error) {
	var stops []func() error
	stopAll = func() error {
		var errs []error
		for i := len(stops) - 1; i >= 0; i-- {
			errs = append(errs, stops[i]())
		}
		return errors.Join(errs...)
	}
	for _, o := range observers {
		stop, err := o.Start(ctx)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("starting %s: %w", o.Name, err), stopAll())
		}
		stops = append(stops, stop)
	}
	return stopAll, nil
}
