package analysis

import (
	"fmt"
	"strings"
	"time"

	"github.com/droprun/droprun/harness/appmetrics"
)

// Balance is how the requests the pods answered over a span just after a
// rollout completed spread over the pods serving then (all of them new),
// from the pods' own counters. A client that keeps its connections open
// sends only what it reconnects to the new pods, so with long-lived
// connections the last pods up can get far less than an even share.
type Balance struct {
	// Seconds is the span's length: from the counters read just after
	// the rollout completed to those read traffic.balance later.
	Seconds float64 `json:"seconds"`
	// Answered is what the pods answered the client over the span.
	Answered int `json:"answered"`
	// Pods are the pods read over the span, sorted by name.
	Pods []PodShare `json:"pods"`
	// Least is the least-served pod's share as a fraction of an even
	// share (1/len(Pods)): 1 is even, 0 a pod that answered nothing.
	Least float64 `json:"leastOfEven"`
	// Undecided says why the shares cannot be trusted (counts not exact,
	// too few requests); empty when they can.
	Undecided string `json:"undecided,omitempty"`
}

// PodShare is one pod's part of a Balance.
type PodShare struct {
	Pod      string `json:"pod"`
	Answered int    `json:"answered"`
	// OfEven is the pod's share as a fraction of an even share.
	OfEven float64 `json:"ofEven"`
}

// MinBalanceRequests is the fewest requests per pod a balance span needs
// for its shares to say something: below it one request moves a share by
// more than a few percent of an even share.
const MinBalanceRequests = 50

// balanceEdges are a rollout's balance span as its marks give it.
type balanceEdges struct{ start, end time.Time }

// addBalance sets each rollout's Balance from the pods' counters read at
// its span's edges; rollouts without both edges (traffic.balance 0, no
// pods' counters, a run recorded before droprun read them) get none.
func (in *input) addBalance(p *plan, rollouts []RolloutSummary) {
	for k := range rollouts {
		e, ok := p.balance[rollouts[k].N]
		if !ok || e.start.IsZero() || e.end.IsZero() {
			continue
		}
		rollouts[k].Balance = balanceOf(appmetrics.Totals(in.app, e.start, e.end), e)
	}
}

// balanceOf is the balance of t, the pods' totals over the span e. A pod
// whose last reading is not after the span's start was gone by then (an
// old pod) and is not counted.
func balanceOf(t appmetrics.Summary, e balanceEdges) *Balance {
	b := &Balance{Seconds: e.end.Sub(e.start).Seconds()}
	var inexact []string
	for _, p := range t.Pods {
		if !p.Last.After(e.start) {
			continue
		}
		b.Pods = append(b.Pods, PodShare{Pod: p.Pod, Answered: p.Answered})
		b.Answered += p.Answered
		switch {
		case p.Uncertain:
			inexact = append(inexact, p.Pod+" (first read after the span began)")
		case p.ScrapeErrors > 0 || p.Last.Before(e.end.Add(-time.Second)):
			inexact = append(inexact, fmt.Sprintf("%s (last read %s before the span's end)", p.Pod, e.end.Sub(p.Last).Round(time.Millisecond)))
		}
	}
	switch {
	case len(b.Pods) == 0:
		b.Undecided = "no pod was read over the span"
		return b
	case len(inexact) > 0:
		b.Undecided = "not counted exactly: " + strings.Join(inexact, ", ")
	case b.Answered < MinBalanceRequests*len(b.Pods):
		b.Undecided = fmt.Sprintf("%d requests over %d pods: a share needs at least %d per pod to say something; lengthen traffic.balance or raise the rate",
			b.Answered, len(b.Pods), MinBalanceRequests)
	}
	even := float64(b.Answered) / float64(len(b.Pods))
	b.Least = 1
	for k := range b.Pods {
		if even > 0 {
			b.Pods[k].OfEven = float64(b.Pods[k].Answered) / even
		}
		b.Least = min(b.Least, b.Pods[k].OfEven)
	}
	return b
}
