package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/atomicfile"
	"github.com/droprun/droprun/harness/gate"
	"github.com/droprun/droprun/harness/report"
	"github.com/droprun/droprun/harness/runfile"
	"github.com/droprun/droprun/harness/scenario"
	"github.com/droprun/droprun/harness/stats"
)

// analyzeRun analyses a run directory from its raw data; a directory that
// is not a run is bad input (exit 2). Warnings about the raw data (a file
// cut off by a crash) go to log.
func analyzeRun(dir string, log io.Writer) (*analysis.Analysis, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, &exitError{code: 2, err: fmt.Errorf("run directory: %w", err)}
	}
	a, err := analysis.Analyze(dir, analysis.Options{})
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, &exitError{code: 2, err: fmt.Errorf("%s is not a droprun run directory: %w", dir, err)}
		}
		return nil, &exitError{code: 2, err: err}
	}
	for _, w := range a.Summary.Warnings {
		fmt.Fprintf(log, "warning: %s: %s\n", dir, w)
	}
	return a, nil
}

// checkableRun is the run check holds to its limits (and compare and
// advise read): analysed from its
// raw data, or, for a run kept as its summary alone (summary.json and
// scenario.yaml without events.jsonl, as a history keeps runs), the
// summary its run wrote, which it says on log.
func checkableRun(dir string, log io.Writer) (*analysis.Analysis, error) {
	_, noSummary := os.Stat(filepath.Join(dir, runfile.SummaryFile))
	if runfile.Exists(dir, runfile.EventsFile) || noSummary != nil {
		return analyzeRun(dir, log)
	}
	sum, err := analysis.ReadSummary(dir)
	if err != nil {
		return nil, &exitError{code: 2, err: fmt.Errorf("%s holds no raw data and its summary.json is unreadable: %w", dir, err)}
	}
	if sum.Format != analysis.SummaryVersion {
		return nil, &exitError{code: 2, err: fmt.Errorf("%s holds no raw data and its summary.json is of format %q; this droprun checks %q", dir, sum.Format, analysis.SummaryVersion)}
	}
	scYAML, err := runfile.Read(dir, runfile.ScenarioFile, 0)
	if err != nil {
		return nil, &exitError{code: 2, err: fmt.Errorf("%s holds summary.json but no scenario.yaml, which check needs to know the variants asked for: keep the run's scenario.yaml beside its summary: %w", dir, err)}
	}
	sc, err := scenario.Parse(filepath.Join(dir, runfile.ScenarioFile), scYAML)
	if err != nil {
		return nil, &exitError{code: 2, err: err}
	}
	fmt.Fprintf(log, "note: %s holds no raw data (events.jsonl): using the summary.json its run wrote\n", dir)
	return &analysis.Analysis{Summary: sum, ScenarioYAML: scYAML, Scenario: sc}, nil
}

// loadRun is checkableRun's summary.
func loadRun(dir string, log io.Writer) (*analysis.Summary, error) {
	a, err := checkableRun(dir, log)
	if err != nil {
		return nil, err
	}
	return a.Summary, nil
}

func formatNames() string {
	var n []string
	for k := range report.Formats {
		n = append(n, k)
	}
	sort.Strings(n)
	return strings.Join(n, ", ")
}

func newReportCmd(s streams) *cobra.Command {
	var (
		format, out string
		noFiles     bool
	)
	cmd := &cobra.Command{
		Use:   "report RUN_DIR",
		Short: "Rebuild a run's results from its raw data and print them",
		Long: `Re-analyse a run directory from its raw data (results-*.bin, events.jsonl,
app-metrics.jsonl, run.json, scenario.yaml; each read once) and print one row per variant: rollouts, rollouts that dropped
anything, requests inside rollout windows, drops, the drop rate with its 95%
interval over rollouts (drops come in bursts, one per rollout, so the
rollout is the sample; docs/statistics.md), the control window's failures
and the floor they predict, the tail, and the achieved/asked rate. A variant
that dropped nothing gets the bound its data supports ("0 in 41,151 requests:
rate < 0.0016 at 95% over rollouts"), not a bare zero. With several
variants, each is compared with the first (the test over rollouts decides;
the rate ratio and Fisher's exact test per request are shown beside it).

Formats: table (default), markdown, csv, json.

It also writes every output into RUN_DIR/report/ (or --out DIR; --no-files
to skip): report.html, one self-contained page with the tables, the plots,
the scenario and a "what this shows" per variant; report.md; summary.csv;
report.json; and plots/, PNG and SVG:
  variants.png                 drop rate per variant with 95% intervals
  deletion-gaps.png            pod deletion → endpoint removal, per pod
  since-deletion-ROW.png       failures against time since the nearest pod deletion
  timeline-ROW-rN.png          per rollout: requests per 100 ms by class, with
                               pod ready / deletion / endpoint removed / pod gone
                               markers and, when recorded, the rig's own load
The raw data is never modified.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			f, ok := report.Formats[format]
			if !ok {
				return usageError("--format %q: use one of %s", format, formatNames())
			}
			a, err := analyzeRun(args[0], s.Err)
			if err != nil {
				return err
			}
			if !noFiles {
				if out == "" {
					out = report.DefaultDir(args[0])
				}
				if err := report.Write(a, args[0], out, s.Err); err != nil {
					return err
				}
			}
			sum := a.Summary
			if err := f(s.Out, sum); err != nil {
				return err
			}
			if format == "table" {
				for _, v := range report.CompareVariants(sum) {
					fmt.Fprintln(s.Out, v)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "table", "output format: "+formatNames())
	cmd.Flags().StringVar(&out, "out", "", "write report.html, plots and the other formats here (default RUN_DIR/report)")
	cmd.Flags().BoolVar(&noFiles, "no-files", false, "only print; write no report files")
	return cmd
}

// Exit codes of `droprun check` beside 0 (pass), 1 (fail) and 2 (bad usage).
const exitInconclusive = 3

func newCheckCmd(s streams) *cobra.Command {
	c := &checkCmd{s: s}
	cmd := &cobra.Command{
		Use:   "check RUN_DIR",
		Short: "A CI gate: exit 1 when a run breaks its drop limits, 3 when it cannot tell",
		Long: `Hold a run to limits, for CI. Every check passes, fails or is inconclusive,
and the exit code is the worst of them:

  0  pass: the data shows every limit is met
  1  fail: a limit is broken, the run or the baseline is not whole
     (interrupted, errored, killed, a variant missing, fewer rollouts than
     asked), or a --variant the scenario asks for was never measured
  2  bad usage: an unknown --variant, a NaN, infinite or negative limit, a
     --max-drop-rate of 1 or more, a --confidence outside [0.5, 1), a
     baseline without the row, a directory that is not a run
  3  inconclusive: the run is too small to show a limit is met (it says how
     many rollouts it would take), or the run or baseline is suspect (a
     control window that was not clean, a client that could not hold its
     rate)

Drops come in bursts, one per rollout, so the rollout is the unit
(docs/statistics.md), and every limit counts the drops connection reuse
masked with those the client saw.

  --max-drop-rate R          the drop rate's upper bound over rollouts at
                             --confidence must be at most R. The bound rests
                             on the row's own rollouts, never on another
                             row's, and takes drops as at least as bursty as
                             --burstiness (default 0.005, as bursty as drops
                             measured on kind: a few rollouts of a bursty
                             service often look calm). A row without drops
                             is bounded for any burst shape (3 clean
                             rollouts: at most 64 % of rollouts drop at all)
                             unless --burstiness is given
  --burstiness RHO           the intraclass correlation of drops within a
                             rollout (0: requests fail independently; 1: a
                             rollout drops all or nothing) the rate bounds
                             assume: a floor for rows that drop, the bursts
                             of a row that does not; said beside the verdict
  --max-drops-per-rollout N  at most --rollout-tolerance of rollouts may drop
                             more than N requests, exactly over rollouts: it
                             passes when the Clopper-Pearson upper bound on
                             the share of rollouts above N is within the
                             tolerance (9 clean rollouts at the default
                             0.3), fails when the lower bound is above it
                             (3 of 3 rollouts above N), and otherwise says
                             how many clean rollouts would pass it
  --rollout-tolerance F      the share of rollouts a per-rollout limit
                             (--max-drops-per-rollout, --min-new-pod-share)
                             lets break it (default 0.3)
  --min-new-pod-share F      each new pod must answer at least F of an even
                             share of the requests in the traffic.balance
                             span after its rollout completed (long-lived
                             connections stay on the old pods' survivors),
                             in all but --rollout-tolerance of rollouts,
                             exactly as --max-drops-per-rollout; undecided
                             spans count against a pass
  --baseline RUN_DIR         non-inferiority: pass when the upper bound on
                             the rate ratio (this run over the same row of
                             the baseline run, quasi-Poisson over rollouts)
                             is within --margin (default 2), fail
                             when its lower bound is beyond it; a baseline
                             without drops bounds no ratio (inconclusive)
  --between-runs SD          how much runs differ beyond their rollouts (the
                             standard deviation of a run's log drop rate,
                             e.g. 0.35): the baseline's bounds include it;
                             without it, the verdict says it is left out
  --history DIR              hold each row to its key's past under DIR (see
                             droprun history): the last good stretch of
                             earlier runs (re-based on an improvement, never
                             on a regression). Fail when the row's drop rate
                             is shown above the past's, pass when shown
                             within --margin times it; how much runs differ
                             beyond their rollouts is measured on the past's
                             runs (3 or more that dropped) or stated with
                             --between-runs. Against a past that dropped
                             nothing, a rollout above --min-allowance is a
                             regression when Fisher's exact test over
                             rollouts shows it. Fewer than
                             --history-min-rollouts (default 20) past
                             rollouts: inconclusive, saying how many more;
                             suspect past runs are left out
  --junit FILE               also write the results as JUnit XML, one test
                             case per row and limit

Example (a GitHub Actions step, after 'droprun run SCENARIO --output-dir out/run';
see examples/ci/):
  droprun check out/run --variant graceful-drain --max-drops-per-rollout 0 \
    --max-drop-rate 0.001 --junit out/check.xml`,
		Args: cobra.ExactArgs(1),
		RunE: c.run,
	}
	f := cmd.Flags()
	f.Float64Var(&c.rate, "max-drop-rate", 0, "highest drop rate allowed, tested against its upper confidence bound (e.g. 0.001)")
	f.Int64Var(&c.perRollout, "max-drops-per-rollout", 0, "most drops allowed in any one rollout (0: none)")
	f.Float64Var(&c.share, "min-new-pod-share", 0, "least share of an even share each new pod must answer after every rollout (e.g. 0.5)")
	f.Float64Var(&c.l.Confidence, "confidence", stats.DefaultConfidence, "confidence of every bound and test")
	f.Float64Var(&c.burstiness, "burstiness", gate.DefaultBurstiness, "intraclass correlation of drops within a rollout the rate bounds assume (a floor for rows that drop; a row without drops is bounded for any burst shape unless this is given)")
	f.Float64Var(&c.l.Tolerance, "rollout-tolerance", gate.DefaultTolerance, "share of rollouts a per-rollout limit lets break it, tested exactly over rollouts")
	f.StringVar(&c.baseline, "baseline", "", "a baseline run directory: pass rows whose rate ratio to it is shown within --margin")
	f.Float64Var(&c.l.Margin, "margin", gate.DefaultMargin, "how many times the baseline's (or the history's) drop rate a row may have and pass --baseline (--history)")
	f.Float64Var(&c.l.BetweenRuns, "between-runs", 0, "standard deviation of a run's log drop rate between runs beyond its rollouts (e.g. 0.35), included in the baseline's bounds")
	f.StringSliceVar(&c.l.Rows, "variant", nil, "check only these rows (default: all); a variant with `from` has a NAME/introducing row too")
	f.StringVar(&c.junit, "junit", "", "also write the results as JUnit XML to this file")
	f.BoolVar(&c.showPassing, "verbose", false, "print passing checks too")
	c.hist.add(cmd)
	return cmd
}

// checkCmd is droprun check's flags and what it does with them.
type checkCmd struct {
	s           streams
	l           gate.Limits
	rate        float64
	perRollout  int64
	share       float64
	burstiness  float64
	baseline    string
	junit       string
	showPassing bool
	hist        historyFlags
}

// run checks the run in args[0] against the limits and prints each
// verdict; the exit code is the worst.
func (c *checkCmd) run(cmd *cobra.Command, args []string) error {
	if cmd.Flags().Changed("max-drop-rate") {
		c.l.MaxDropRate = &c.rate
	}
	if cmd.Flags().Changed("max-drops-per-rollout") {
		c.l.MaxDropsPerRollout = &c.perRollout
	}
	if cmd.Flags().Changed("min-new-pod-share") {
		c.l.MinNewPodShare = &c.share
	}
	if cmd.Flags().Changed("burstiness") {
		c.l.Burstiness = &c.burstiness
	}
	if !(c.l.Tolerance > 0) {
		return usageError("--rollout-tolerance %v: give the share of rollouts a per-rollout limit lets break it, above 0 and below 1, e.g. 0.3", c.l.Tolerance)
	}
	if !(c.l.Margin >= 1) {
		return usageError("--margin %v: give how many times the baseline's drop rate a run may have, 1 or more, e.g. 2", c.l.Margin)
	}
	if err := c.hist.set(cmd, &c.l); err != nil {
		return err
	}
	if c.baseline == "" {
		// Validate before reading anything: bad limits are bad usage.
		if err := c.l.Validate(); err != nil {
			return usageError("%w", err)
		}
	}
	a, err := checkableRun(args[0], c.s.Err)
	if err != nil {
		return err
	}
	if err := c.hist.read(&c.l, a, args[0], c.s.Err); err != nil {
		return err
	}
	if c.baseline != "" {
		if c.l.Baseline, err = loadRun(c.baseline, c.s.Err); err != nil {
			return err
		}
	}
	rep, err := gate.Check(a, c.l)
	var ue *gate.UsageError
	if errors.As(err, &ue) {
		return usageError("%w", err)
	} else if err != nil {
		return err
	}
	return c.print(rep, args[0])
}

// print writes the report's results (--junit too) and returns the exit
// code its verdict asks for.
func (c *checkCmd) print(rep *gate.Report, dir string) error {
	rep.Run = dir
	if c.junit != "" {
		if err := atomicfile.WriteFunc(c.junit, 0o644, rep.JUnit); err != nil {
			return fmt.Errorf("writing --junit %s: %w", c.junit, err)
		}
	}
	counts := map[gate.Verdict]int{}
	for _, r := range rep.Results {
		counts[r.Verdict]++
		if r.Verdict == gate.Pass && !c.showPassing {
			continue
		}
		where := r.Row
		if where == "" {
			where = "run"
		}
		fmt.Fprintf(c.s.Out, "%-12s %s %s: %s\n", strings.ToUpper(r.Verdict.String()), where, r.Check, r.Message)
	}
	fmt.Fprintf(c.s.Out, "%s: %d passed, %d failed, %d inconclusive\n", dir, counts[gate.Pass], counts[gate.Fail], counts[gate.Inconclusive])
	switch rep.Verdict() {
	case gate.Fail:
		return &exitError{code: 1}
	case gate.Inconclusive:
		return &exitError{code: exitInconclusive}
	}
	return nil
}

func newCompareCmd(s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "compare RUN_A RUN_B",
		Short: "Compare two runs variant by variant, per rollout (and per request, labelled)",
		Long: `Compare each row present in both runs. Each verdict leads with the rate
ratio over rollouts and its 95% interval; the test over rollouts decides
(drops come in bursts, one per rollout, so requests are not independent
trials: the quasi-binomial test charges the requests for the bursts the
rollouts show; docs/statistics.md), its p-values Holm-adjusted over the
rows compared, so that a difference is declared falsely anywhere among
them at most 5% of the time; the rate ratio with Fisher's exact test per
request is shown beside it, labelled. When no difference is found,
it says how many rollouts would detect a 2x difference; when no side dropped
in two or more rollouts, that the bursts cannot be measured.`,
		Args: cobra.ExactArgs(2),
		RunE: func(_ *cobra.Command, args []string) error {
			a, err := loadRun(args[0], s.Err)
			if err != nil {
				return err
			}
			b, err := loadRun(args[1], s.Err)
			if err != nil {
				return err
			}
			verdicts := report.Compare(a, b)
			if len(verdicts) == 0 {
				return &exitError{code: 2, err: fmt.Errorf("the runs have no variant in common")}
			}
			for _, v := range verdicts {
				fmt.Fprintln(s.Out, v)
			}
			return nil
		},
	}
}
