package run

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/atomicfile"
	"github.com/droprun/droprun/harness/jsonl"
	"github.com/droprun/droprun/harness/scenario"
)

// Output is a run directory being written. The file names are analysis's.
type Output struct {
	Dir    string
	Events *os.File
	Log    *os.File
	// App receives the pods' own counters (analysis.AppFile).
	App *os.File

	failures *os.File
	fw       *jsonl.Writer
}

// CreateOutput creates the run directory and records the scenario in it. It
// refuses a directory that already holds anything: recorded results are
// never overwritten.
func CreateOutput(dir string, sc *scenario.Scenario) (*Output, error) {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("output directory %s is not empty: droprun never overwrites recorded results; choose another --output-dir", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the output directory: %w", err)
	}
	y, err := yaml.Marshal(sc)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Write(filepath.Join(dir, analysis.ScenarioFile), y); err != nil {
		return nil, err
	}
	o := &Output{Dir: dir}
	if o.Events, err = os.Create(filepath.Join(dir, analysis.EventsFile)); err != nil {
		return nil, err
	}
	if o.Log, err = os.Create(filepath.Join(dir, analysis.LogFile)); err != nil {
		return nil, err
	}
	if o.App, err = os.Create(filepath.Join(dir, analysis.AppFile)); err != nil {
		return nil, err
	}
	if o.failures, err = os.Create(filepath.Join(dir, analysis.FailuresFile)); err != nil {
		return nil, err
	}
	o.fw = jsonl.NewWriter(o.failures, analysis.FailuresFile)
	return o, nil
}

// Results creates the raw results file of a variant's load from the
// source named origin (analysis.ResultsFileOf).
func (o *Output) Results(variant, origin string) (*os.File, error) {
	return os.Create(filepath.Join(o.Dir, analysis.ResultsFileOf(variant, origin)))
}

// WriteFailure appends one failed request to failures.jsonl.
func (o *Output) WriteFailure(f analysis.Failure) error {
	o.fw.Write(f)
	return o.fw.Err()
}

// WriteSummary writes summary.json whole, so a reader never sees half a
// summary.
func (o *Output) WriteSummary(s *analysis.Summary) error {
	return atomicfile.WriteJSON(filepath.Join(o.Dir, analysis.SummaryFile), s)
}

// WriteRunInfo writes run.json whole.
func (o *Output) WriteRunInfo(ri *analysis.RunInfo) error {
	return atomicfile.WriteJSON(filepath.Join(o.Dir, analysis.RunFile), ri)
}

// Close flushes and closes every file.
func (o *Output) Close() error {
	return firstErr(o.fw.Close(), o.failures.Close(), o.Events.Close(), o.Log.Close(), o.App.Close())
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
