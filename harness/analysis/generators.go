package analysis

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/droprun/droprun/harness/timeline"
)

// generatorRuns is where a variant's generator pods ran and what they may
// have missed, from the timeline (traffic.generators: pods).
type generatorRuns struct {
	// places are each origin's nodes, in time order: from each
	// placement's time on, its requests left from that node.
	places map[string][]placement
	gaps   []generatorGap
	// stalls are each origin's stretches a second or more behind
	// schedule, in time order (generators.Stall).
	stalls map[string]stalls
	// clocks are what the estimates say of each node's clock (the
	// generator pods on a node share it); shared says the nodes share
	// droprun's clock (kind: containers on one kernel); corrected that
	// some node's records are corrected.
	clocks    map[string]*nodeClock
	shared    bool
	corrected bool
}

// nodeClock is what the estimates say of one node's clock, summed up once
// for every record that reads it.
type nodeClock struct {
	estimates []clockEstimate // in time order
	// bound is the widest estimate's; corrected says some estimate is off
	// droprun's clock by more than its bound, off kind.
	bound     time.Duration
	corrected bool
}

// clockEstimate is one estimate of a node's clock: at droprun's time at,
// its offset from droprun's clock, within ±bound.
type clockEstimate struct {
	at            time.Time
	offset, bound time.Duration
}

// unknownClock is the bound of a clock never estimated.
const unknownClock = time.Duration(math.MaxInt64)

type placement struct {
	at   time.Time
	node string
}

// generatorGap is an interval in which origin's requests may be missing.
type generatorGap struct {
	origin   string
	from, to time.Time
	why      string
}

// generatorsOf reads variant's generator placements, gaps, stalls and
// clock estimates; shared says the nodes share droprun's clock.
func generatorsOf(events []timeline.Event, variant string, shared bool) generatorRuns {
	g := generatorRuns{places: map[string][]placement{}, stalls: map[string]stalls{}, clocks: map[string]*nodeClock{}, shared: shared}
	estimate := func(node string, at time.Time, d map[string]string) {
		offset, oerr := time.ParseDuration(d["offset"])
		bound, berr := time.ParseDuration(d["bound"])
		if oerr != nil || berr != nil || bound <= 0 {
			return
		}
		c := g.clocks[node]
		if c == nil {
			c = &nodeClock{}
			g.clocks[node] = c
		}
		c.estimates = append(c.estimates, clockEstimate{at, offset, bound})
		c.bound = max(c.bound, bound)
		c.corrected = c.corrected || !shared && offset.Abs() > bound
		g.corrected = g.corrected || c.corrected
	}
	for _, e := range events {
		if e.Detail["variant"] != variant {
			continue
		}
		switch e.Kind {
		case timeline.KindGeneratorPlaced:
			o := e.Detail["origin"]
			g.places[o] = append(g.places[o], placement{e.Time, e.Detail["node"]})
			estimate(e.Detail["node"], e.Time, e.Detail)
		case timeline.KindGeneratorClock:
			if at, err := time.Parse(time.RFC3339Nano, e.Detail["at"]); err == nil {
				estimate(e.Detail["node"], at, e.Detail)
			}
		case timeline.KindGeneratorGap:
			from, to, ok := span(e.Detail)
			if !ok {
				continue
			}
			g.gaps = append(g.gaps, generatorGap{origin: e.Detail["origin"], from: from, to: to, why: e.Detail["why"]})
		case timeline.KindGeneratorStall:
			from, to, ok := span(e.Detail)
			lag, lerr := time.ParseDuration(e.Detail["lag"])
			if !ok || lerr != nil {
				continue
			}
			o := e.Detail["origin"]
			g.stalls[o] = append(g.stalls[o], stall{from: from, to: to, stallWhy: stallWhy{generator: lag.Seconds()}})
		}
	}
	for _, c := range g.clocks {
		slices.SortFunc(c.estimates, func(a, b clockEstimate) int { return a.at.Compare(b.at) })
	}
	return g
}

// span reads an event's from and to (RFC 3339); ok is false when either
// does not parse.
func span(d map[string]string) (from, to time.Time, ok bool) {
	from, ferr := time.Parse(time.RFC3339Nano, d["from"])
	to, terr := time.Parse(time.RFC3339Nano, d["to"])
	return from, to, ferr == nil && terr == nil
}

// correction is how far ahead of droprun's clock the clock of the node
// origin sent from at t was: its records' times less this are droprun's.
// It is 0 when the nodes share droprun's clock, and while every estimate
// of that node's clock holds 0 within its bound (the exchanges cannot
// tell it from droprun's); else the estimates' offsets interpolated
// linearly to t (the nearest's before the first or after the last).
func (g generatorRuns) correction(origin string, t time.Time) time.Duration {
	if !g.corrected { // every record of a kind run, or of clocks that agree
		return 0
	}
	c := g.clocks[g.node(origin, t)]
	if c == nil || !c.corrected {
		return 0
	}
	es := c.estimates
	i := slices.IndexFunc(es, func(e clockEstimate) bool { return e.at.After(t) })
	switch {
	case i == 0:
		return es[0].offset
	case i < 0:
		return es[len(es)-1].offset
	}
	a, b := es[i-1], es[i]
	f := float64(t.Sub(a.at)) / float64(b.at.Sub(a.at))
	return a.offset + time.Duration(f*float64(b.offset-a.offset))
}

// clockBound is how far off the corrected time of origin's request sent
// at t may be: the largest bound of its node's estimates; 0 when the
// nodes share droprun's clock or for the host's own requests,
// unknownClock when the node's clock was never estimated.
func (g generatorRuns) clockBound(origin string, t time.Time) time.Duration {
	node := g.node(origin, t)
	if g.shared || node == "" {
		return 0
	}
	c := g.clocks[node]
	if c == nil {
		return unknownClock
	}
	return c.bound
}

// nodeClocks says what is known of each generator node's clock.
func (g generatorRuns) nodeClocks() []NodeClock {
	nodes := map[string]bool{}
	for _, ps := range g.places {
		for _, p := range ps {
			nodes[p.node] = true
		}
	}
	var out []NodeClock
	for _, node := range slices.Sorted(maps.Keys(nodes)) {
		c := NodeClock{Node: node, Shared: g.shared}
		if nc := g.clocks[node]; nc != nil {
			c.Estimates, c.Bound, c.Corrected = len(nc.estimates), nc.bound.Seconds(), nc.corrected
			for _, e := range nc.estimates {
				if e.offset.Abs() > seconds(math.Abs(c.Offset)) {
					c.Offset = e.offset.Seconds()
				}
			}
		}
		out = append(out, c)
	}
	return out
}

// node is the node origin's request sent at t left from: the latest
// placement at or before t, else the first ("" for no generator).
func (g generatorRuns) node(origin string, t time.Time) string {
	ps := g.places[origin]
	if len(ps) == 0 {
		return ""
	}
	i, found := slices.BinarySearchFunc(ps, t, func(p placement, t time.Time) int { return p.at.Compare(t) })
	if !found {
		i = max(i-1, 0)
	}
	return ps[i].node
}

// stalled is how far behind schedule origin was at worst while a request
// was in flight from from to to: zero when it did not stall.
func (g generatorRuns) stalled(origin string, from, to time.Time) stallWhy {
	return g.stalls[origin].during(from, to)
}

// incomplete says why a window from start to end is missing requests:
// every generator gap it overlaps; "" when none does.
func (g generatorRuns) incomplete(start, end time.Time) string {
	why := ""
	for _, gap := range g.gaps {
		if gap.from.After(end) || gap.to.Before(start) {
			continue
		}
		if why != "" {
			why += "; "
		}
		why += fmt.Sprintf("generator %s missing from %s to %s (%s)", gap.origin, gap.from.Format("15:04:05.000"), gap.to.Format("15:04:05.000"), gap.why)
	}
	return why
}
