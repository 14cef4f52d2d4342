package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/droprun/droprun/harness/advise"
	"github.com/droprun/droprun/harness/stats"
)

func newAdviseCmd(s streams) *cobra.Command {
	var (
		o      advise.Options
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "advise RUN_DIR...",
		Short: "Recommend a preStop sleep (or drain delay) and grace period from measured route data",
		Long: `Read every (pod deletion, node) pair the runs measured (when each node stopped
routing new connections to a pod being deleted, seconds after the deletion
request), take each deleted pod's latest node (when every node had
stopped), and put a distribution-free upper confidence bound D on a high
quantile of those: by default, with 95% confidence, for 99% of deletions
every node stops routing within D. A run through a front that picks the pod
itself (traffic.target: traefik or caddy) has a second hop: when each front
pod stopped sending to the pod, from the front's own API or log. Each hop is bounded
over its own pairs, and the largest bound, whose hop the output names, is D:
a pod must outlast every list that still names it. From D it prints:

  preStop.sleep.seconds           ⌈D⌉ (the native sleep takes whole seconds)
  a drain delay                   D rounded up to 100 ms, for apps that delay
                                  their own listener close after SIGTERM
  terminationGracePeriodSeconds   preStop + the larger of 30 s and the app's
                                  longest SIGTERM → exit in the runs + 5 s

beside the delays' distribution (per kube-proxy mode and per node), the pairs
whose stop was not seen (the bound excludes them), the margins it does not
count on (deletion → SIGTERM, the app's SIGTERM → listener close), and how
many more rollouts would tighten the bound (or reach the quantile, when there
are too few deletions for it). Where the runs sweep preStopSeconds or drainDelay,
it checks the recommendation against the smallest swept value from which
every larger one dropped nothing beyond the rig's floor.

Exit codes: 0 advice printed, 2 bad usage or a directory that is not a run,
3 undecided: the runs hold no route data (runs recorded before droprun
measured it, or not on a kind cluster).

Example:
  droprun advise out/sweep-prestop out/demo --quantile 0.99 --confidence 0.95`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := o.Validate(); err != nil {
				return usageError("%w", err)
			}
			var runs []advise.Run
			for _, dir := range args {
				sum, err := loadRun(dir, s.Err)
				if err != nil {
					return err
				}
				runs = append(runs, advise.Run{Dir: dir, Summary: sum})
			}
			a, err := advise.Advise(runs, o)
			var nd *advise.NoRouteDataError
			if errors.As(err, &nd) {
				if asJSON {
					b, _ := json.Marshal(map[string]string{"verdict": "undecided", "reason": nd.Error()})
					fmt.Fprintln(s.Out, string(b))
				} else {
					fmt.Fprintf(s.Out, "undecided: %s\n", nd)
				}
				return &exitError{code: exitInconclusive}
			} else if err != nil {
				return err
			}
			if asJSON {
				return a.WriteJSON(s.Out)
			}
			return a.WriteText(s.Out)
		},
	}
	f := cmd.Flags()
	f.Float64Var(&o.Quantile, "quantile", advise.DefaultQuantile, "the share of deleted pods whose every node the delay must cover")
	f.Float64Var(&o.Confidence, "confidence", stats.DefaultConfidence, "the confidence of the bound")
	f.BoolVar(&asJSON, "json", false, "print the advice as JSON")
	return cmd
}
