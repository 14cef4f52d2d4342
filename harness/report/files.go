package report

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/atomicfile"
	"github.com/droprun/droprun/harness/plot"
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

// Write renders an analysed run into outDir: report.html
// (self-contained), report.md, summary.csv, report.json and
// plots/NAME.{png,svg}. runDir is only named on the page. Each file is
// written whole (a temporary file renamed into place), so an interrupted
// report never leaves half a file behind.
func Write(a *analysis.Analysis, runDir, outDir string, log io.Writer) error {
	start := time.Now()
	for _, d := range []string{outDir, filepath.Join(outDir, PlotsDir)} {
		if fi, err := os.Lstat(d); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s is a link: droprun writes a report into a folder of its own, never through a link (it could point anywhere); remove the link, or choose another folder with droprun report --out", d)
		}
	}
	figs, err := plot.Figures(a)
	if err != nil {
		return fmt.Errorf("building the plots: %w", err)
	}
	if err := plot.Write(filepath.Join(outDir, PlotsDir), figs); err != nil {
		return err
	}
	sum := a.Summary
	render := map[string]func(io.Writer) error{
		HTMLFile: func(w io.Writer) error {
			return HTML(w, sum, HTMLInput{Figures: figs, ScenarioYAML: a.ScenarioYAML, RunDir: runDir})
		},
		MarkdownFile: func(w io.Writer) error { return Markdown(w, sum) },
		CSVFile:      func(w io.Writer) error { return CSV(w, sum) },
		JSONFile:     func(w io.Writer) error { return JSON(w, sum) },
	}
	for name, f := range render {
		var buf bytes.Buffer
		if err := f(&buf); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := atomicfile.Write(filepath.Join(outDir, name), buf.Bytes()); err != nil {
			return err
		}
	}
	fmt.Fprintf(log, "report: %s (%d plots) in %s\n", filepath.Join(outDir, HTMLFile), len(figs), time.Since(start).Round(100*time.Millisecond))
	return nil
}
