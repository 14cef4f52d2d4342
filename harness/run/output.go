package run

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/atomicfile"
	"github.com/droprun/droprun/harness/jsonl"
	"github.com/droprun/droprun/harness/runfile"
	"github.com/droprun/droprun/harness/scenario"
)

// Output is a run directory being written. The file names are analysis's.
type Output struct {
	Dir    string
	Events *os.File
	Log    *os.File
	// App receives the pods' own counters (runfile.AppFile).
	App *os.File

	failures *os.File
	fw       *jsonl.Writer
}

// CreateOutput creates the run directory and records the scenario in it. It
// refuses a directory that already holds anything, or that is a link:
// recorded results are never overwritten. The scenario file is created
// exclusively first and claims the directory, so two runs started at once
// (in the same second, with the same default directory) never share one:
// the second is refused. Every file of the run is created exclusively.
func CreateOutput(dir string, sc *scenario.Scenario) (*Output, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("creating the output directory: %w", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("creating the output directory: %w", err)
	}
	if fi, err := os.Lstat(dir); err != nil {
		return nil, err
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("output directory %s is not a directory (%s): choose another --output-dir", dir, fi.Mode().Type())
	}
	if entries, err := os.ReadDir(dir); err != nil {
		return nil, err
	} else if len(entries) > 0 {
		return nil, fmt.Errorf("output directory %s is not empty: droprun never overwrites recorded results; choose another --output-dir", dir)
	}
	y, err := yaml.Marshal(sc)
	if err != nil {
		return nil, err
	}
	claim, err := createNew(dir, runfile.ScenarioFile)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("output directory %s was just claimed by another run (started at the same moment): choose another --output-dir, or start again", dir)
	} else if err != nil {
		return nil, err
	}
	if _, err := claim.Write(y); err != nil {
		claim.Close()
		return nil, err
	}
	if err := claim.Close(); err != nil {
		return nil, err
	}
	o := &Output{Dir: dir}
	if o.Events, err = createNew(dir, runfile.EventsFile); err != nil {
		return nil, err
	}
	if o.Log, err = createNew(dir, runfile.LogFile); err != nil {
		return nil, err
	}
	if o.App, err = createNew(dir, runfile.AppFile); err != nil {
		return nil, err
	}
	if o.failures, err = createNew(dir, runfile.FailuresFile); err != nil {
		return nil, err
	}
	o.fw = jsonl.NewWriter(o.failures, runfile.FailuresFile)
	return o, nil
}

// createNew creates file name in dir, failing if anything (a link
// included) is already there.
func createNew(dir, name string) (*os.File, error) {
	return os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
}

// Create creates file name in the run directory, failing if anything is
// already there: for a raw file only some runs write (frontlog.jsonl).
func (o *Output) Create(name string) (*os.File, error) {
	return createNew(o.Dir, name)
}

// Results creates the raw results file of a variant's load from the
// source named origin (runfile.ResultsFileOf).
func (o *Output) Results(variant, origin string) (*os.File, error) {
	return createNew(o.Dir, runfile.ResultsFileOf(variant, origin))
}

// WriteFailure appends one failed request to failures.jsonl.
func (o *Output) WriteFailure(f analysis.Failure) error {
	o.fw.Write(f)
	return o.fw.Err()
}

// WriteSummary writes summary.json whole, so a reader never sees half a
// summary.
func (o *Output) WriteSummary(s *analysis.Summary) error {
	return atomicfile.WriteJSON(filepath.Join(o.Dir, runfile.SummaryFile), s)
}

// WriteRunInfo writes run.json whole.
func (o *Output) WriteRunInfo(ri *analysis.RunInfo) error {
	return atomicfile.WriteJSON(filepath.Join(o.Dir, runfile.RunFile), ri)
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
