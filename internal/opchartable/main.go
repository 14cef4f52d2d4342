// Command opchartable writes the gate's operating characteristics, as
// harness/gate/opchar measures them against ground truth, into the tables
// of docs/statistics.md (`make stats-table`). The asserted table is the
// one TestOperatingCharacteristics checks; the measured one covers the
// modes not yet held to the targets.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/droprun/droprun/harness/gate/opchar"
)

func main() {
	doc := flag.String("doc", "docs/statistics.md", "the document whose opchar blocks to rewrite")
	runs := flag.Int("runs", opchar.DefaultRuns, "simulated runs per cell")
	flag.Parse()
	if err := write(*doc, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "opchartable:", err)
		os.Exit(1)
	}
}

func write(path string, runs int) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	doc := string(b)
	for _, block := range []struct {
		name  string
		modes []opchar.Mode
	}{{"asserted", opchar.Modes}, {"regression", nil}, {"truths", nil}, {"changes", nil}, {"coverage", nil}} {
		var text string
		switch block.name {
		case "regression":
			text = opchar.RegressionTable(opchar.Regressions(runs, opchar.Seed))
		case "truths":
			text = opchar.Truths()
		case "changes":
			text = opchar.ChangeTable(runs/4, opchar.Seed)
		case "coverage":
			text = opchar.CoverageTable(runs, opchar.Seed)
		default:
			text = opchar.Markdown(opchar.Run(block.modes, runs, opchar.Seed))
		}
		if doc, err = opchar.Replace(doc, block.name, text); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return os.WriteFile(path, []byte(doc), 0o644)
}
