package runfile

import (
	"os"
	"slices"
	"strings"
)

// The files of a run directory: the one list of their names, which the
// run writes and every reader opens (ARCHITECTURE.md, "The run directory:
// a contract").
const (
	ScenarioFile = "scenario.yaml"     // the scenario as run, every default filled in
	RunFile      = "run.json"          // what only the live run knew (analysis.RunInfo)
	EventsFile   = "events.jsonl"      // the timeline: one JSON event per line
	AppFile      = "app-metrics.jsonl" // the pods' own request counters
	FrontLogFile = "frontlog.jsonl"    // a front's access log, one parsed line per request
	FailuresFile = "failures.jsonl"    // every failed request, attributed (derived)
	SummaryFile  = "summary.json"      // the summary (derived)
	LogFile      = "run.log"           // the progress output
	MetricsFile  = "metrics.prom"      // the live metrics' final values
)

// HostOrigin is the origin of the host client's load: its results file is
// ResultsFile(variant), with no origin in the name.
const HostOrigin = "host"

// ResultsFile is the raw results of one variant from the host client, in
// vegeta's own encoding: `vegeta report < results-no-prestop.bin` works on
// it. Another load source writes ResultsFileOf(variant, origin) beside it.
func ResultsFile(variant string) string { return "results-" + variant + ".bin" }

// ResultsFileOf is the raw results of one variant from the load source
// named origin: results-VARIANT+ORIGIN.bin, or ResultsFile for the host
// client. Origins are droprun's own names (host, pod-N), so a variant whose
// name holds a '+' (a sweep value such as +5s) cannot be taken for another
// variant's source: no valid sweep value is another one plus "+pod-N".
func ResultsFileOf(variant, origin string) string {
	if origin == HostOrigin {
		return ResultsFile(variant)
	}
	return "results-" + variant + "+" + origin + ".bin"
}

// Results is one results file of a variant and the load source that wrote it.
type Results struct{ Name, Origin string }

// ResultsFiles lists every results file of variant in dir, the host
// client's first, then the other sources' by name; none when the
// variant's traffic never started. A packed file counts by its plain name
// (OpenRaw reads either), and a file in both forms once.
func ResultsFiles(dir, variant string) ([]Results, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []Results
	prefix := "results-" + variant + "+"
	seen := map[string]bool{}
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), Packed)
		if seen[name] {
			continue
		}
		seen[name] = true
		switch {
		case name == ResultsFile(variant):
			out = slices.Insert(out, 0, Results{name, HostOrigin})
		case strings.HasPrefix(name, prefix) && strings.HasSuffix(name, ".bin") && len(name) > len(prefix)+len(".bin"):
			out = append(out, Results{name, strings.TrimSuffix(strings.TrimPrefix(name, prefix), ".bin")})
		}
	}
	return out, nil
}

// RawFiles lists the raw files of the run in dir that are there
// unpacked: what Pack packs for shipping (results, events, failures, the
// pods' and a front's records). run.json, summary.json and scenario.yaml
// are kept as they are: a history reads them.
func RawFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		switch {
		case !e.Type().IsRegular():
		case name == EventsFile, name == AppFile, name == FailuresFile, name == FrontLogFile,
			strings.HasPrefix(name, "results-") && strings.HasSuffix(name, ".bin"):
			out = append(out, name)
		}
	}
	return out, nil
}
