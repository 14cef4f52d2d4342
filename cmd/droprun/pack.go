package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/droprun/droprun/harness/runfile"
)

func newPackCmd(s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "pack RUN_DIR...",
		Short: "Pack a run's raw files (gzip, about a tenth of their size) so that it can be shipped",
		Long: `Replace each raw file of a run directory (results-*.bin, events.jsonl,
failures.jsonl, app-metrics.jsonl, frontlog.jsonl) by its gzip'd form, FILE.gz:
written beside it, read back and compared with the original, and only then the
original removed. report, check, compare, advise and history read a packed run
as they read a fresh one. run.json, summary.json, scenario.yaml and the
report are left as they are.

results/examples/ ships its runs packed; vegeta reads a packed results file
with: gunzip -c results-no-prestop.bin.gz | vegeta report

Examples:
  droprun pack results/20261206T101500Z-demo`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, dirs []string) error {
			for _, dir := range dirs {
				if !runfile.Exists(dir, runfile.RunFile) {
					return usageError("%s holds no %s: not a run directory", dir, runfile.RunFile)
				}
				names, err := runfile.RawFiles(dir)
				if err != nil {
					return err
				}
				before, after, err := runfile.Pack(dir, names)
				if err != nil {
					return err
				}
				if len(names) == 0 {
					fmt.Fprintf(s.Out, "%s: nothing to pack (packed already, or no raw data)\n", dir)
					continue
				}
				fmt.Fprintf(s.Out, "%s: packed %d raw files, %.1f MiB → %.1f MiB\n", dir, len(names), float64(before)/(1<<20), float64(after)/(1<<20))
			}
			return nil
		},
	}
}
