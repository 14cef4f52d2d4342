package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/report"
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

// loadRun is analyzeRun's summary.
func loadRun(dir string, log io.Writer) (*analysis.Summary, error) {
	a, err := analyzeRun(dir, log)
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
Wilson interval, the control window's failures and the floor they predict, the
tail, and the achieved/asked rate. A variant that dropped nothing gets the
bound its data supports ("0 in 45,000 requests: rate < 6.7e-5 at 95%"), not
a bare zero. With several variants, each is compared with the first (rate
ratio, Fisher's exact test).

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

func newCheckCmd(s streams) *cobra.Command {
	var (
		l        report.Limits
		baseline string
	)
	cmd := &cobra.Command{
		Use:   "check RUN_DIR",
		Short: "A CI gate: exit 1 when a run breaks its drop limits",
		Long: `Hold a run to limits, for CI: exit 0 when every checked variant meets them,
1 when one does not (the failing rows are printed), 2 on bad input.

  --max-drop-rate R          drops / rollout-window requests must not exceed R
  --max-drops-per-rollout N  no single rollout may drop more than N requests
  --baseline RUN_DIR         fail a variant that drops significantly more than
                             the same variant in the baseline run (Fisher p < 0.05)

A run with suspect numbers (a control window that was not clean, a client that
could not hold its rate) fails: it is not a measurement.

Example (GitHub Actions, after 'droprun run ... --output-dir out/run'):
  droprun check out/run --variant graceful-drain --max-drops-per-rollout 0`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if l.MaxDropRate < 0 && l.MaxDropsPerRollout < 0 && baseline == "" {
				return usageError("give at least one of --max-drop-rate, --max-drops-per-rollout, --baseline")
			}
			sum, err := loadRun(args[0], s.Err)
			if err != nil {
				return err
			}
			var base *analysis.Summary
			if baseline != "" {
				if base, err = loadRun(baseline, s.Err); err != nil {
					return err
				}
			}
			fails := report.Check(sum, base, l)
			if len(fails) == 0 {
				fmt.Fprintf(s.Out, "ok: %s meets its limits\n", args[0])
				return nil
			}
			for _, f := range fails {
				fmt.Fprintln(s.Out, "FAIL", f)
			}
			return &exitError{code: 1, err: fmt.Errorf("%d check(s) failed", len(fails))}
		},
	}
	f := cmd.Flags()
	f.Float64Var(&l.MaxDropRate, "max-drop-rate", -1, "highest drop rate allowed (e.g. 0.0001); negative: no limit")
	f.Int64Var(&l.MaxDropsPerRollout, "max-drops-per-rollout", -1, "most drops allowed in one rollout; negative: no limit")
	f.StringVar(&baseline, "baseline", "", "a baseline run directory to compare with")
	f.StringSliceVar(&l.Variants, "variant", nil, "check only these variant rows (default: all)")
	return cmd
}

func newCompareCmd(s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "compare RUN_A RUN_B",
		Short: "Compare two runs variant by variant (rate ratio, Fisher's exact test)",
		Args:  cobra.ExactArgs(2),
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
