package run

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/droprun/droprun/harness/appmetrics"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/timeline"
	"github.com/droprun/droprun/harness/traffic"
)

// The marks a run writes into events.jsonl. They carry the variant (and
// the rollout) in Detail; the analysis rebuilds every window from them, so
// a run directory can always be analysed again from its raw data.
const (
	MarkTrafficStart     timeline.Kind = "traffic.start"
	MarkTrafficStop      timeline.Kind = "traffic.stop" // Detail["stats"]: traffic.Stats as JSON
	MarkRolloutStart                   = timeline.KindRolloutStart
	MarkRolloutComplete                = timeline.KindRolloutComplete
	MarkWindowClose                    = timeline.KindWindowClose
	MarkConntrackFlushed               = timeline.KindConntrackFlushed
	MarkBaseline         timeline.Kind = "baseline"    // Detail["clean"], Detail["wait"]
	MarkRigSample        timeline.Kind = "rig.sample"  // Detail: rig.Sample.Detail()
	MarkAppScraped       timeline.Kind = "app.scraped" // the pods' counters were read after traffic stopped
)

// plan is what happened during one variant, rebuilt from the marks.
type plan struct {
	attackStart, attackEnd time.Time
	controlEnd             time.Time
	appScraped             time.Time // the pods' counters read after traffic stopped
	rollouts               []RolloutSummary
	stats                  traffic.Stats
}

// planFromEvents rebuilds variant's plan from the run's marks.
func planFromEvents(events []timeline.Event, variant string) (*plan, error) {
	p := &plan{}
	var cur *RolloutSummary
	for _, e := range events {
		if e.Detail["variant"] != variant {
			continue
		}
		n, _ := strconv.Atoi(e.Detail["rollout"])
		switch e.Kind {
		case MarkTrafficStart:
			p.attackStart = e.Time
		case MarkTrafficStop:
			p.attackEnd = e.Time
			if s := e.Detail["stats"]; s != "" {
				if err := json.Unmarshal([]byte(s), &p.stats); err != nil {
					return nil, fmt.Errorf("traffic stats of %s: %w", variant, err)
				}
			}
		case MarkAppScraped:
			p.appScraped = e.Time
		case MarkRolloutStart:
			p.rollouts = append(p.rollouts, RolloutSummary{N: n, From: e.Detail["from"], To: e.Detail["to"],
				MeasuredVariant: e.Detail["measured"], LiveTemplate: e.Detail["live"], Start: e.Time, BaselineClean: true})
			cur = &p.rollouts[len(p.rollouts)-1]
		case MarkRolloutComplete:
			if cur != nil && cur.N == n {
				cur.Complete = e.Time
				cur.Duration = e.Time.Sub(cur.Start).Round(100 * time.Millisecond).String()
			}
		case MarkWindowClose:
			if Phase(e.Detail["phase"]) == PhaseControl {
				p.controlEnd = e.Time
			} else if cur != nil && cur.N == n {
				cur.WindowEnd = e.Time
			}
		case MarkConntrackFlushed:
			if cur != nil && cur.N == n {
				_ = json.Unmarshal([]byte(e.Detail["flushed"]), &cur.ConntrackFlushed)
			}
		case MarkBaseline:
			if cur != nil && cur.N == n {
				cur.BaselineClean = e.Detail["clean"] == "true"
				cur.BaselineWait = e.Detail["wait"]
			}
		}
	}
	if p.attackStart.IsZero() {
		return nil, fmt.Errorf("variant %s: no %s mark: its traffic never started", variant, MarkTrafficStart)
	}
	if p.attackEnd.IsZero() && len(events) > 0 {
		// The run died without stopping traffic: the last event bounds it.
		p.attackEnd = events[len(events)-1].Time
	}
	return p, nil
}

// windows lays out a variant's traffic time: control until the first
// rollout, then each rollout's window and its tail. A request still in
// flight when traffic stopped was sent before attackEnd, so the last window
// ends there.
func (p *plan) windows() []Window {
	end := p.attackEnd
	if len(p.rollouts) == 0 {
		return []Window{{Phase: PhaseControl, Start: p.attackStart, End: end}}
	}
	w := []Window{{Phase: PhaseControl, Start: p.attackStart, End: p.rollouts[0].Start}}
	for k, rs := range p.rollouts {
		next := end
		if k+1 < len(p.rollouts) {
			next = p.rollouts[k+1].Start
		}
		wend := rs.WindowEnd
		if wend.IsZero() || wend.After(next) { // interrupted inside the window
			wend = next
		}
		w = append(w, Window{Phase: PhaseRollout, Rollout: rs.N, Start: rs.Start, End: wend})
		if wend.Before(next) {
			w = append(w, Window{Phase: PhaseTail, Rollout: rs.N, Start: wend, End: next})
		}
	}
	return w
}

// analyzeVariant reads variant i's results back from dir, assigns every
// request to its window (rebuilt from the marks in events), passes each
// failure to failure (may be nil), and builds the variant's rows.
func analyzeVariant(dir string, sc *scenario.Scenario, i int, events []timeline.Event, failure func(Failure) error) ([]VariantSummary, error) {
	v := sc.Variants[i]
	p, err := planFromEvents(events, v.Name)
	if err != nil {
		return nil, err
	}
	tl := NewTimeline(p.windows())
	f, err := os.Open(filepath.Join(dir, ResultsFile(v.Name)))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	err = traffic.ReadResults(f, func(rec traffic.Record) error {
		w := tl.Add(rec.Time, rec.Class)
		if !rec.Class.Failed() || failure == nil {
			return nil
		}
		fl := Failure{Time: rec.Time, Variant: v.Name, Phase: "outside", Class: rec.Class, Code: rec.Code, Error: rec.Error, Latency: rec.Latency.Seconds()}
		if w >= 0 {
			fl.Phase, fl.Rollout = tl.Windows[w].Phase, tl.Windows[w].Rollout
		}
		if d, ok := timeline.NearestDeletion(events, rec.Time); ok {
			fl.NearestDeletion, fl.SinceDeletion = d.Pod, rec.Time.Sub(d.Time).Seconds()
		}
		return failure(fl)
	})
	if err != nil {
		return nil, fmt.Errorf("reading results of %s back: %w", v.Name, err)
	}
	rows := buildRows(v.Name, v.Variant, v.From, p, tl, p.stats, between(events, p.attackStart, p.attackEnd))
	server, err := serverView(dir, p, tl)
	if err != nil {
		return rows, err
	}
	for k := range rows {
		rows[k].Server = server
	}
	return rows, nil
}

// serverView sets what the pods say they answered while the variant's
// traffic ran (from AppFile) beside what the client got; nil for runs
// without the pods' counters.
func serverView(dir string, p *plan, tl *Timeline) (*ServerView, error) {
	if p.appScraped.IsZero() {
		return nil, nil
	}
	f, err := os.Open(filepath.Join(dir, AppFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	records, err := appmetrics.Read(f)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", AppFile, err)
	}
	// The last scrape can be stamped a hair after the mark written when it
	// returned; a second's margin takes it in (the next variant's pods
	// answer nothing that early).
	t := appmetrics.Totals(records, p.attackStart, p.appScraped.Add(time.Second))
	v := &ServerView{PodsAnswered: t.Answered, PodsAnswered2xx: t.Answered2xx, Uncertain: t.Uncertain, ScrapeErrors: t.ScrapeErrors}
	for _, pod := range t.Pods {
		if pod.Answered == 0 {
			continue // another variant's pod, idle over this range
		}
		v.Pods++
		if pod.Final {
			v.PodsFinal++
		}
	}
	for _, tally := range append(append([]Tally(nil), tl.Tallies...), tl.Outside) {
		v.ClientSent += tally.Requests
		v.ClientGot2xx += tally.Classes[traffic.Class2xx]
	}
	return v, nil
}

// Analyze rebuilds a run's summary from its directory's raw data: the
// scenario as run, events.jsonl and the results files. failure, if not nil,
// receives every failed request, attributed. Variants whose traffic never
// started are left out.
func Analyze(dir string, failure func(Failure) error) (*Summary, error) {
	sc, err := scenario.Load(filepath.Join(dir, ScenarioFile))
	if err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(dir, EventsFile))
	if err != nil {
		return nil, err
	}
	events, err := timeline.ReadEvents(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EventsFile, err)
	}
	sum := &Summary{Format: SummaryVersion, Scenario: sc.Metadata.Name}
	if old, err := ReadSummary(dir); err == nil {
		// Keep what only the live run knew: where and when it ran.
		sum.Started, sum.Finished, sum.Cluster, sum.Traffic = old.Started, old.Finished, old.Cluster, old.Traffic
		sum.Interrupted, sum.Error = old.Interrupted, old.Error
	}
	for i, v := range sc.Variants {
		if _, err := os.Stat(filepath.Join(dir, ResultsFile(v.Name))); err != nil {
			continue
		}
		rows, err := analyzeVariant(dir, sc, i, events, failure)
		if err != nil {
			return nil, err
		}
		sum.Variants = append(sum.Variants, rows...)
		for _, row := range rows {
			sum.Suspect = append(sum.Suspect, prefixed(row.Variant, row.Suspect)...)
		}
	}
	return sum, nil
}

// ReadSummary reads a run directory's summary.json.
func ReadSummary(dir string) (*Summary, error) {
	path := filepath.Join(dir, SummaryFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if s.Format != SummaryVersion {
		return nil, fmt.Errorf("%s: format %q, this droprun reads %q", path, s.Format, SummaryVersion)
	}
	return &s, nil
}

// between returns the events in [from, to].
func between(events []timeline.Event, from, to time.Time) []timeline.Event {
	var out []timeline.Event
	for _, e := range events {
		if !e.Time.Before(from) && !e.Time.After(to) {
			out = append(out, e)
		}
	}
	return out
}

// introducingSuffix names the row of a variant with From that holds the
// rollout which introduced it.
const introducingSuffix = "/introducing"

// RowVariant returns the scenario variant a summary row was built from:
// the one whose results file (ResultsFile) holds the row's requests. The
// rows of a variant with From share its results file.
func RowVariant(row string) string { return strings.TrimSuffix(row, introducingSuffix) }

// buildRows turns one variant's windows into summary rows: one row, or two
// for a variant with From (the rollout that introduced it, then the rest).
func buildRows(name, builtin, from string, p *plan, tl *Timeline, stats traffic.Stats, events []timeline.Event) []VariantSummary {
	var control, outside Tally
	perRollout := map[int]*RolloutSummary{}
	rollouts := append([]RolloutSummary(nil), p.rollouts...)
	for k := range rollouts {
		perRollout[rollouts[k].N] = &rollouts[k]
	}
	for k, w := range tl.Windows {
		switch w.Phase {
		case PhaseControl:
			control.Merge(tl.Tallies[k])
		case PhaseRollout:
			perRollout[w.Rollout].Window.Merge(tl.Tallies[k])
			perRollout[w.Rollout].Rig = rigSummary(events, w.Start, w.End)
		case PhaseTail:
			perRollout[w.Rollout].Tail.Merge(tl.Tallies[k])
		}
	}
	outside.Merge(tl.Outside)
	var controlRig *RigSummary
	if len(tl.Windows) > 0 && tl.Windows[0].Phase == PhaseControl {
		controlRig = rigSummary(events, tl.Windows[0].Start, tl.Windows[0].End)
	}
	// With rig samples, when the client lagged is known per window: the
	// rollouts it affected are flagged below, so the attack-wide lag
	// reason would only repeat it less precisely.
	clientSuspect := stats.Suspect
	if hasRigSamples(events) {
		clientSuspect = nil
		for _, s := range stats.Suspect {
			if !strings.HasPrefix(s, traffic.LagSuspect) {
				clientSuspect = append(clientSuspect, s)
			}
		}
	}

	var requests uint64
	for _, t := range tl.Tallies {
		requests += t.Requests
	}
	requests += tl.Outside.Requests

	client := ClientSummary{AskedRate: stats.AskedRate, AchievedRate: stats.AchievedRate, CPU: stats.ClientCPU, WorkersExhausted: stats.WorkersExhausted, Suspect: clientSuspect}
	gaps := gapsOf(events)
	hooks := hookFailures(events)

	row := func(rowName, expected string, rs []RolloutSummary) VariantSummary {
		vs := VariantSummary{Variant: rowName, Builtin: builtin, Requests: requests, Control: control, Outside: outside,
			Rollouts: rs, Client: client, Gaps: gaps, HookFailures: hooks, Classes: map[traffic.Class]uint64{}, ControlRig: controlRig}
		var window Tally
		for _, r := range rs {
			window.Merge(r.Window)
			if r.Rig != nil && r.Rig.Saturated {
				vs.SaturatedRollouts++
				if r.Window.Failures > 0 {
					vs.Suspect = append(vs.Suspect, fmt.Sprintf("rollout %d: the rig was short of CPU (%s): its %d drops may be the rig's, not the variant's", r.N, r.Rig, r.Window.Failures))
				}
			} else {
				vs.Measurable.Merge(r.Window)
			}
			vs.Tail.Merge(r.Tail)
			if r.Window.Failures > 0 {
				vs.RolloutsWithDrops++
			}
			if expected != "" && r.MeasuredVariant != "custom" && r.MeasuredVariant != expected {
				vs.Suspect = append(vs.Suspect, fmt.Sprintf("rollout %d deleted pods of variant %s, not %s (live template: %s)", r.N, r.MeasuredVariant, expected, r.LiveTemplate))
			}
			if !r.BaselineClean {
				vs.Suspect = append(vs.Suspect, fmt.Sprintf("no clean baseline after rollout %d: failures kept coming before the next rollout", r.N))
			}
		}
		vs.Drops, vs.WindowRequests = window.Failures, window.Requests
		for c, n := range window.Classes {
			vs.Classes[c] = n
		}
		if control.Requests > 0 {
			vs.ExpectedFloor = float64(control.Failures) / float64(control.Requests) * float64(window.Requests)
		}
		if control.Failures > 0 {
			vs.Suspect = append(vs.Suspect, fmt.Sprintf("the control window was not clean: %d failures in %d requests; drops near %.1f are the rig's own floor", control.Failures, control.Requests, vs.ExpectedFloor))
		}
		if control.Requests == 0 {
			vs.Suspect = append(vs.Suspect, "no control window: nothing to compare the rollout windows with")
		}
		vs.Suspect = append(vs.Suspect, clientSuspect...)
		return vs
	}
	if from == "" || len(rollouts) == 0 {
		return []VariantSummary{row(name, builtin, rollouts)}
	}
	return []VariantSummary{
		row(name+introducingSuffix, from, rollouts[:1]),
		row(name, builtin, rollouts[1:]),
	}
}

// gapsOf measures, per deleted pod, deletion → endpoint changes.
func gapsOf(events []timeline.Event) []Gap {
	var gaps []Gap
	for _, g := range timeline.DeletionToRemoval(events) {
		gaps = append(gaps, Gap{Pod: g.Pod, EndpointUnready: seconds(g.EndpointUnready), EndpointRemoved: seconds(g.EndpointRemoved)})
	}
	return gaps
}

// hasRigSamples reports whether events hold rig samples (runs recorded
// before the sampler existed have none).
func hasRigSamples(events []timeline.Event) bool {
	for _, e := range events {
		if e.Kind == MarkRigSample {
			return true
		}
	}
	return false
}

func seconds(d time.Duration) float64 {
	if d < 0 {
		return -1
	}
	return d.Seconds()
}

// hookFailures lists Warning events about failed preStop hooks.
func hookFailures(events []timeline.Event) []string {
	var out []string
	for _, e := range events {
		if e.Kind == timeline.KindPodEvent && e.Detail["reason"] == "FailedPreStopHook" {
			out = append(out, fmt.Sprintf("%s %s: %s", e.Time.Format("15:04:05.000"), e.Pod, e.Detail["message"]))
		}
	}
	return out
}
