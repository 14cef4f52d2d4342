package run

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"sigs.k8s.io/yaml"

	"github.com/droprun/droprun/harness/appmetrics"
	"github.com/droprun/droprun/harness/scenario"
)

// The files of a run directory.
const (
	ScenarioFile = "scenario.yaml"  // the scenario as run, every default filled in
	EventsFile   = "events.jsonl"   // the timeline: one JSON event per line
	FailuresFile = "failures.jsonl" // every failed request, attributed
	SummaryFile  = "summary.json"   // the Summary
	LogFile      = "run.log"        // the progress output
	MetricsFile  = "metrics.prom"   // the live metrics' final values, Prometheus text format
	AppFile      = appmetrics.File  // the pods' own request counters (app-metrics.jsonl)
)

// ResultsFile is the raw results of one variant, in vegeta's own encoding:
// `vegeta report < results-no-prestop.bin` works on it.
func ResultsFile(variant string) string { return "results-" + variant + ".bin" }

// Output is a run directory being written.
type Output struct {
	Dir    string
	Events *os.File
	Log    *os.File
	// App receives the pods' own counters (AppFile).
	App *os.File

	mu       sync.Mutex
	failures *os.File
	fw       *bufio.Writer
	enc      *json.Encoder
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
	if err := os.WriteFile(filepath.Join(dir, ScenarioFile), y, 0o644); err != nil {
		return nil, err
	}
	o := &Output{Dir: dir}
	if o.Events, err = os.Create(filepath.Join(dir, EventsFile)); err != nil {
		return nil, err
	}
	if o.Log, err = os.Create(filepath.Join(dir, LogFile)); err != nil {
		return nil, err
	}
	if o.App, err = os.Create(filepath.Join(dir, AppFile)); err != nil {
		return nil, err
	}
	if o.failures, err = os.Create(filepath.Join(dir, FailuresFile)); err != nil {
		return nil, err
	}
	o.fw = bufio.NewWriter(o.failures)
	o.enc = json.NewEncoder(o.fw)
	return o, nil
}

// ResultsPath is the path of a variant's raw results.
func (o *Output) ResultsPath(variant string) string {
	return filepath.Join(o.Dir, ResultsFile(variant))
}

// Results creates a variant's raw results file.
func (o *Output) Results(variant string) (*os.File, error) {
	return os.Create(o.ResultsPath(variant))
}

// WriteFailure appends one failed request to failures.jsonl.
func (o *Output) WriteFailure(f Failure) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.enc.Encode(f)
}

// WriteSummary writes summary.json atomically (a temporary file renamed
// into place), so a reader never sees half a summary.
func (o *Output) WriteSummary(s *Summary) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(o.Dir, "."+SummaryFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(o.Dir, SummaryFile))
}

// Close flushes and closes every file.
func (o *Output) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	var first error
	for _, err := range []error{o.fw.Flush(), o.failures.Close(), o.Events.Close(), o.Log.Close(), o.App.Close()} {
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}
