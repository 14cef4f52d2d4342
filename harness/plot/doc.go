// Package plot draws a run directory's figures, as PNG (DPI dots per inch)
// and SVG, with gonum.org/v1/plot and the Liberation fonts it ships.
//
// # Use
//
// The figures need what run.Analyze computes (the summary, and every
// failure attributed to its rollout and nearest pod deletion), and Analyze
// is the expensive part: it reads every results file. So it runs once,
// with a Collector's Failure method as its callback:
//
//	c := plot.NewCollector()
//	sum, err := run.Analyze(dir, c.Failure)
//	...
//	figs, err := c.Build(dir, sum)
//	...
//	err = plot.Write(outDir, figs) // NAME.png and NAME.svg per figure
//
// Build(dir) does the three first steps in one call. The Collector bins
// the failures as they come; Collector.Build reads events.jsonl and
// streams every results file once more (traffic.ReadResults) to bin each
// rollout's requests, 2xx included, which Analyze does not hand out.
// Memory stays flat: only 100 ms bins are kept, never the records.
//
// # Figures
//
// In the order Build returns them:
//
//   - "variants": the drop rate of every variant row (failed share of its
//     rollout-window requests) with its 95% interval over rollouts, on a log axis;
//     a row with no drops shows the interval's upper bound as a dashed bar
//     with an arrow towards zero, since zero has no place on a log axis.
//   - "deletion-gaps": per row, one dot per deleted pod at its delay from
//     deletion request to endpoint removal; pods whose removal was not seen
//     after the deletion request (run.Gap.EndpointRemoved < 0) sit in a
//     "not seen" column rather than being dropped. The rows of a variant
//     with From share one set of gaps in the summary; they are split by
//     the rollout window each pod's deletion fell in.
//   - "new-pod-share", when some rollout measured it: per row, one dot per
//     new pod per rollout at its share of the requests the pods answered
//     in the traffic.balance span after the rollout completed, as a
//     fraction of an even share (a grey line at 1), and a black bar at the
//     least-served pod; undecided spans are counted, not drawn.
//   - "since-deletion-ROW", per row: its rollout-window failures against
//     the time since the latest pod deletion request (run.Failure's
//     SinceDeletion), 100 ms bins stacked by class, with each deleted
//     pod's endpoint removal marked: the race between deletion and
//     endpoint removal. A row without failures gets the figure anyway,
//     saying so. Failures sent before their rollout deleted any pod are
//     left out, and the caption counts them.
//   - "timeline-ROW-rN", per rollout: requests per 100 ms by the time they
//     were sent, from 2 s before the rollout's start to 2 s after its
//     window closed, stacked by class; all requests in one panel, the
//     failures alone (on their own scale) below, and above them a lane per
//     cluster event kind (new pod ready, pod deletion requested, endpoint
//     removed, pod gone, rollout complete), which the panels also mark with
//     vertical lines. Traffic outside the window is faded. When the run
//     recorded rig samples (run.MarkRigSample) over the rollout's range, two
//     thin panels about the rig follow on the same x axis: CPU pressure and
//     host busy share in percent, and the traffic client's lag behind its
//     schedule in seconds with run.SaturationLag as a dashed line.
//     A rollout whose run.RigSummary is Saturated says so in the rig panel,
//     the title and the caption: its failures may be the machine's. Runs
//     without rig samples get the figure without those panels, as before.
//
// ROW is the row name made file-safe ("the-trap/introducing" becomes
// "the-trap-introducing"); names are unique within a run. Every class has
// the same colour in every figure (ClassColor), its colour in the class
// catalogue (traffic.ClassInfo), which the report page uses too, and
// every legend sits in a strip right of the data, never over it.
package plot
