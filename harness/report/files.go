package report

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/droprun/droprun/harness/plot"
	"github.com/droprun/droprun/harness/run"
)

// The files Write puts in a report directory.
const (
	HTMLFile     = "report.html"
	MarkdownFile = "report.md"
	CSVFile      = "summary.csv"
	JSONFile     = "report.json"
	PlotsDir     = "plots"
)

// DefaultDir is where a run's report goes unless told otherwise: a
// directory of its own inside the run directory, so that rebuilding it
// never touches the raw data.
func DefaultDir(runDir string) string { return filepath.Join(runDir, "report") }

// Write rebuilds a run's results from its raw data in runDir and writes
// every output into outDir: report.html (self-contained), report.md,
// summary.csv, report.json and plots/NAME.{png,svg}. It returns the
// summary. Each file is written whole (a temporary file renamed into
// place), so an interrupted report never leaves half a file behind.
func Write(runDir, outDir string, log io.Writer) (*run.Summary, error) {
	start := time.Now()
	c := plot.NewCollector()
	sum, err := run.Analyze(runDir, c.Failure)
	if err != nil {
		return nil, err
	}
	figs, err := c.Build(runDir, sum)
	if err != nil {
		return sum, fmt.Errorf("building the plots: %w", err)
	}
	if err := plot.Write(filepath.Join(outDir, PlotsDir), figs); err != nil {
		return sum, err
	}
	scenarioYAML, err := os.ReadFile(filepath.Join(runDir, run.ScenarioFile))
	if err != nil {
		return sum, err
	}
	render := map[string]func(io.Writer) error{
		HTMLFile: func(w io.Writer) error {
			return HTML(w, sum, HTMLInput{Figures: figs, ScenarioYAML: scenarioYAML, RunDir: runDir})
		},
		MarkdownFile: func(w io.Writer) error { return Markdown(w, sum) },
		CSVFile:      func(w io.Writer) error { return CSV(w, sum) },
		JSONFile:     func(w io.Writer) error { return JSON(w, sum) },
	}
	for name, f := range render {
		var buf bytes.Buffer
		if err := f(&buf); err != nil {
			return sum, fmt.Errorf("%s: %w", name, err)
		}
		if err := writeFile(filepath.Join(outDir, name), buf.Bytes()); err != nil {
			return sum, err
		}
	}
	fmt.Fprintf(log, "report: %s (%d plots) in %s\n", filepath.Join(outDir, HTMLFile), len(figs), time.Since(start).Round(100*time.Millisecond))
	return sum, nil
}

// writeFile writes b to path through a temporary file renamed into place.
func writeFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
