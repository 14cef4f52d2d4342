package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/atomicfile"
	"github.com/droprun/droprun/harness/gate"
	"github.com/droprun/droprun/harness/history"
	"github.com/droprun/droprun/harness/plot"
	"github.com/droprun/droprun/harness/stats"
)

func newHistoryCmd(s streams) *cobra.Command {
	var (
		format, html string
		conf         float64
		o            history.Options
	)
	cmd := &cobra.Command{
		Use:   "history DIR...",
		Short: "Many runs over time: drops per rollout by configuration, and where they changed",
		Long: `Read every run directory under the paths given (a directory holding
summary.json; at most --max-depth below each path, at most --max-runs in
all) and print, per configuration key, the runs in time order: droprun's
version, the app's image, rollouts, drops per rollout, the drop rate with its
95% interval over rollouts, and each rollout's drops. A directory that is not
a usable run (killed, interrupted, unreadable) is skipped with a one-line
reason.

The key is what must match for runs to be compared: scenario, row (variant),
path (traffic.target, and generator pods), protocol and connection mode,
kube-proxy mode, Kubernetes version and the app's image repository. What you
change from run to run, droprun's version and the image's tag or digest, is
not in the key: it is what each run shows.

Each series is tested for a change point: the split between two runs that
best separates their drop rates, tested by permuting whole runs (a run's
rollouts share a cluster and a day; runs are the exchangeable unit), then
again on either side. A change is reported as "changed at run R (date,
droprun version, image): from X to Y drops per rollout" with its p-value;
fewer than 8 runs cannot show one at 95%, and the output says so
(docs/history.md).

Runs keep summary.json, so a history can be kept as summaries alone (tens
of kilobytes a run): copy out/RUN/summary.json into a directory per run.

Example: droprun history results/examples/history
         droprun history out/ --format csv > history.csv
         droprun history out/ --html history.html`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(history.Formats, format) {
				return usageError("--format %q: use one of %s", format, strings.Join(history.Formats, ", "))
			}
			if !(conf >= 0.5 && conf < 1) {
				return usageError("--confidence %v: give at least 0.5 and below 1, e.g. 0.95", conf)
			}
			h, err := readHistory(args, o, s.Err)
			if err != nil {
				return err
			}
			v := history.ViewOf(h, conf)
			if html != "" {
				drawn, err := plot.History(v)
				if err != nil {
					return err
				}
				figs := make([]history.Figure, len(drawn))
				for i, f := range drawn {
					figs[i] = history.Figure{Title: f.Title, Caption: f.Caption, SVG: f.SVG}
				}
				if err := atomicfile.WriteFunc(html, 0o644, func(w io.Writer) error { return history.WriteHTML(w, v, figs) }); err != nil {
					return fmt.Errorf("writing --html %s: %w", html, err)
				}
				fmt.Fprintf(s.Err, "wrote %s\n", html)
			}
			if len(v.Series) == 0 {
				return &exitError{code: 1, err: fmt.Errorf("no runs under %s", strings.Join(args, ", "))}
			}
			return history.Write(s.Out, v, format)
		},
	}
	f := cmd.Flags()
	f.StringVar(&format, "format", "text", "output format: "+strings.Join(history.Formats, ", "))
	f.StringVar(&html, "html", "", "also write an HTML page with a trend plot per key to this file")
	f.Float64Var(&conf, "confidence", stats.DefaultConfidence, "confidence of the change-point test (a change needs p below 1 minus it); the drop rates' intervals are always 95%")
	f.IntVar(&o.MaxRuns, "max-runs", history.DefaultMaxRuns, "most run directories read; more is an error")
	f.IntVar(&o.MaxDepth, "max-depth", history.DefaultMaxDepth, "how deep below each path runs are looked for")
	return cmd
}

// readHistory reads the runs under paths, saying on log which it skipped.
// A path that does not exist is bad usage.
func readHistory(paths []string, o history.Options, log io.Writer) (*history.History, error) {
	h, err := history.Read(paths, o)
	if errors.Is(err, history.ErrNoPath) {
		return nil, usageError("%w", err)
	} else if err != nil {
		return nil, err
	}
	for _, sk := range h.Skipped {
		fmt.Fprintf(log, "skipped %s: %s\n", sk.Dir, sk.Why)
	}
	return h, nil
}

// historyPasts is each row's past in h as run a would be gated against it:
// the earlier clean runs of the row's key since it last changed.
func historyPasts(h *history.History, a *analysis.Analysis, dir string, conf float64) map[string]history.Past {
	out := map[string]history.Past{}
	for _, v := range a.Summary.Variants {
		k := history.KeyOf(a.Summary, v)
		if s := h.Find(k); s != nil {
			out[v.Variant] = s.Before(a.Summary.Started, dir, conf)
		} else {
			out[v.Variant] = history.Past{Key: k}
		}
	}
	return out
}

// historyFlags are check's flags for --history.
type historyFlags struct {
	dirs  []string
	limit gate.HistoryLimit
}

func (hf *historyFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringSliceVar(&hf.dirs, "history", nil, "directories of earlier runs (as `droprun history` reads them): fail a row whose drop rate is shown above its key's last good stretch of runs, pass one shown within --margin times it")
	f.Float64Var(&hf.limit.MinAllowance, "min-allowance", 0, "with --history: drops per rollout never counted as a regression against a past that dropped nothing")
	f.IntVar(&hf.limit.MinRollouts, "history-min-rollouts", 20, "with --history: fewer past rollouts of the key make the check inconclusive (exit 3)")
}

// set validates the flags and, with --history, sets l.History (its
// pasts are read once the run is: read).
func (hf *historyFlags) set(cmd *cobra.Command, l *gate.Limits) error {
	if len(hf.dirs) == 0 {
		for _, name := range []string{"min-allowance", "history-min-rollouts"} {
			if cmd.Flags().Changed(name) {
				return usageError("--%s needs --history DIR", name)
			}
		}
		return nil
	}
	l.History = &hf.limit
	return nil
}

// read fills l.History's pasts for run a in dir.
func (hf *historyFlags) read(l *gate.Limits, a *analysis.Analysis, dir string, log io.Writer) error {
	if l.History == nil {
		return nil
	}
	h, err := readHistory(hf.dirs, history.Options{}, log)
	if err != nil {
		return err
	}
	l.History.Past = historyPasts(h, a, dir, l.Confidence)
	return nil
}
