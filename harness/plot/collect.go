package plot

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/droprun/droprun/harness/run"
	"github.com/droprun/droprun/harness/timeline"
)

// Collector gathers what the figures need from run.Analyze's failure
// callback, binned as the failures arrive (its memory grows with the
// number of 100 ms bins, not with the number of failures). Pass its
// Failure method to run.Analyze, then call Build with the summary Analyze
// returned. A Collector is not safe for concurrent use; run.Analyze calls
// the callback from one goroutine.
type Collector struct {
	// since holds, per rollout and per pod whose deletion was the nearest
	// before the failure, the rollout window's failures by time since
	// that deletion.
	since map[rolloutKey]map[string]sparse
	// noDeletion counts, per rollout, window failures with no pod deletion
	// before them: they have no place on the since-deletion axis.
	noDeletion map[rolloutKey]uint64
	// tail counts, per rollout, the failures after its window closed.
	tail map[rolloutKey]uint64
}

// rolloutKey names one rollout: the scenario variant (run.Failure.Variant,
// whose results file holds it) and its number.
type rolloutKey struct {
	variant string
	rollout int
}

// NewCollector returns an empty Collector.
func NewCollector() *Collector {
	return &Collector{
		since:      map[rolloutKey]map[string]sparse{},
		noDeletion: map[rolloutKey]uint64{},
		tail:       map[rolloutKey]uint64{},
	}
}

// Failure records one attributed failure. It has the signature of
// run.Analyze's callback and never returns an error.
func (c *Collector) Failure(f run.Failure) error {
	k := rolloutKey{f.Variant, f.Rollout}
	switch f.Phase {
	case run.PhaseRollout:
		if f.NearestDeletion == "" {
			c.noDeletion[k]++
			return nil
		}
		byPod := c.since[k]
		if byPod == nil {
			byPod = map[string]sparse{}
			c.since[k] = byPod
		}
		s := byPod[f.NearestDeletion]
		if s == nil {
			s = sparse{}
			byPod[f.NearestDeletion] = s
		}
		s.add(time.Duration(math.Round(f.SinceDeletion*1e9)), f.Class)
	case run.PhaseTail:
		c.tail[k]++
	}
	return nil
}

// Build analyses the run directory dir once (run.Analyze, with a
// Collector) and draws its figures. It returns the summary Analyze rebuilt
// along with them.
func Build(dir string) (*run.Summary, []Figure, error) {
	c := NewCollector()
	sum, err := run.Analyze(dir, c.Failure)
	if err != nil {
		return nil, nil, fmt.Errorf("analysing %s: %w", dir, err)
	}
	figs, err := c.Build(dir, sum)
	if err != nil {
		return nil, nil, err
	}
	return sum, figs, nil
}

// Build draws the figures of the run in dir, whose summary is sum (as
// rebuilt by the run.Analyze that fed c). It reads events.jsonl and streams
// every results file once more, binning requests as they are read. The
// figures come in this order: the variant comparison ("variants"), the
// deletion-to-removal delays ("deletion-gaps"), then per variant row its
// since-deletion histogram ("since-deletion-ROW") and one timeline per
// rollout ("timeline-ROW-rN"). Names are unique and file-safe.
func (c *Collector) Build(dir string, sum *run.Summary) ([]Figure, error) {
	if sum == nil {
		return nil, fmt.Errorf("plot: no summary")
	}
	events, err := readEvents(dir)
	if err != nil {
		return nil, err
	}
	rollouts, err := binTimelines(dir, sum, events)
	if err != nil {
		return nil, err
	}
	deleted := deletions(events)
	gaps := splitGaps(sum, deleted)

	var figs []Figure
	add := func(f Figure, err error) error {
		if err != nil {
			return fmt.Errorf("figure %s: %w", f.Name, err)
		}
		figs = append(figs, f)
		return nil
	}
	if err := add(variantsFigure(sum)); err != nil {
		return nil, err
	}
	if err := add(gapsFigure(sum, gaps)); err != nil {
		return nil, err
	}
	for _, row := range sum.Variants {
		if err := add(sinceFigure(c.sinceData(row, gaps[row.Variant], deleted))); err != nil {
			return nil, err
		}
		for _, rd := range rollouts[row.Variant] {
			if err := add(timelineFigure(rd)); err != nil {
				return nil, err
			}
		}
	}
	uniqueNames(figs)
	return figs, nil
}

// readEvents reads dir's events.jsonl.
func readEvents(dir string) ([]timeline.Event, error) {
	f, err := os.Open(filepath.Join(dir, run.EventsFile))
	if err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	defer f.Close()
	events, err := timeline.ReadEvents(f)
	if err != nil {
		return nil, fmt.Errorf("plot: %s: %w", run.EventsFile, err)
	}
	return events, nil
}

// deletions returns when each pod's deletion was first requested.
func deletions(events []timeline.Event) map[string]time.Time {
	deleted := map[string]time.Time{}
	for _, e := range events {
		if e.Kind == timeline.KindPodDeletionRequested && e.Pod != "" {
			if t, ok := deleted[e.Pod]; !ok || e.Time.Before(t) {
				deleted[e.Pod] = e.Time
			}
		}
	}
	return deleted
}

// splitGaps returns each row's deletion gaps. A row's summary carries the
// gaps of every pod deleted while its variant's traffic ran, so the rows
// of a variant with From (which share one results file and one stretch of
// events) carry the same gaps; they are split here by the rollout window
// each pod's deletion was requested in. A shared gap whose deletion falls
// in no row's rollout is counted under "" (the caption says so).
func splitGaps(sum *run.Summary, deleted map[string]time.Time) map[string][]run.Gap {
	out := map[string][]run.Gap{}
	rowsOf := map[string][]*run.VariantSummary{}
	for i := range sum.Variants {
		v := run.RowVariant(sum.Variants[i].Variant)
		rowsOf[v] = append(rowsOf[v], &sum.Variants[i])
	}
	for _, rows := range rowsOf {
		if len(rows) == 1 {
			out[rows[0].Variant] = rows[0].Gaps
			continue
		}
	gap:
		for _, g := range rows[0].Gaps {
			t, ok := deleted[g.Pod]
			for _, row := range rows {
				for _, rs := range row.Rollouts {
					if ok && !t.Before(rs.Start) && t.Before(windowEnd(rs)) {
						out[row.Variant] = append(out[row.Variant], g)
						continue gap
					}
				}
			}
			out[""] = append(out[""], g)
		}
	}
	return out
}

// windowEnd returns when rs's window closed: WindowEnd, or for a window
// never closed (the run was interrupted) Complete, or else a minute after
// the start.
func windowEnd(rs run.RolloutSummary) time.Time {
	switch {
	case !rs.WindowEnd.IsZero():
		return rs.WindowEnd
	case !rs.Complete.IsZero():
		return rs.Complete
	default:
		return rs.Start.Add(time.Minute)
	}
}
