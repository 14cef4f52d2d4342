package analysis

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/droprun/droprun/harness/runfile"
	"github.com/droprun/droprun/harness/traffic"
)

// RunVersion is the version of run.json's format.
const RunVersion = "droprun.run/v1"

// RunInfo is run.json: the facts about a run that its raw data cannot
// give back. The run writes it when it starts and again when it ends.
type RunInfo struct {
	Format string `json:"format"`
	Facts
	// Rig is what the run changed on the machine to keep the client apart
	// from the cluster it measures, and whether it was put back.
	Rig RigSettings `json:"rig"`
}

// Unfinished says how the run did not finish (who names it, e.g. "the
// baseline"), or "" when it did.
func (f Facts) Unfinished(who string) string {
	switch {
	case f.Interrupted:
		return who + " was interrupted"
	case f.Error != "":
		return who + " ended in an error: " + f.Error
	case f.Finished.IsZero():
		return who + " never finished (killed, or still running)"
	}
	return ""
}

// Facts are what only the live run knew, in run.json and, copied, in
// summary.json.
type Facts struct {
	Scenario string    `json:"scenario"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	// Interrupted is true when the run was cancelled (Ctrl-C); Error is
	// the error that ended it early. A run.json with neither and no
	// Finished is a run that was killed.
	Interrupted bool        `json:"interrupted,omitempty"`
	Error       string      `json:"error,omitempty"`
	Cluster     ClusterInfo `json:"cluster"`
	Traffic     TrafficInfo `json:"traffic"`
}

// ClusterInfo says where the run happened.
type ClusterInfo struct {
	Name          string `json:"name"`
	Kind          bool   `json:"kind"`
	Nodes         int    `json:"nodes,omitempty"`
	KubeProxyMode string `json:"kubeProxyMode,omitempty"`
	NodeImage     string `json:"nodeImage,omitempty"`
	Kubernetes    string `json:"kubernetes,omitempty"`
	DroprunVer    string `json:"droprun"`
	// CPUWeight says how the kind nodes' CPU weight was lowered for the
	// run, e.g. "/sys/fs/cgroup/cpu/docker/cpu.shares 1024→256"; empty
	// when it was left alone.
	CPUWeight string `json:"cpuWeight,omitempty"`
}

// TrafficInfo is the traffic as configured.
type TrafficInfo struct {
	URL string `json:"url"`
	// Targets are the entry points the client spread its requests over,
	// round robin: one per node on a kind cluster.
	Targets []traffic.Target `json:"targets,omitempty"`
	Rate    int              `json:"rate"`
	// Protocol is how the client talked to the targets; KeepAlive says
	// the same for runs recorded before Protocol (see ProtocolOf).
	Protocol  traffic.Protocol `json:"protocol,omitempty"`
	KeepAlive bool             `json:"keepAlive"`
	// Connections is, for a multiplexed protocol (h2c), how many
	// connections the client kept to each target.
	Connections int    `json:"connections,omitempty"`
	Method      string `json:"method"`
	Timeout     string `json:"timeout"`
	Target      string `json:"target"`
	Rollouts    int    `json:"rollouts"`
	Settle      string `json:"settle"`
	Control     string `json:"control"`
	Between     string `json:"between"`
	// IdleTimeout is the client's idle timeout for kept-alive connections
	// ("" where the protocol keeps none idle); Arrivals how it spaced its
	// requests ("" in runs recorded before it: constant).
	IdleTimeout string `json:"idleTimeout,omitempty"`
	Arrivals    string `json:"arrivals,omitempty"`
	// ClientProcs is the client's GOMAXPROCS during the run.
	ClientProcs int `json:"clientProcs,omitempty"`
	// Generators is how many generator pods sent the load from inside
	// the cluster (traffic.generators: pods); 0: the host client did.
	// Their Targets are as the pods reached them.
	Generators int `json:"generators,omitempty"`
}

// ProtocolOf returns how the client talked to the targets, from Protocol
// or, in a run recorded before it, from KeepAlive.
func (t TrafficInfo) ProtocolOf() traffic.Protocol {
	if t.Protocol != "" {
		return t.Protocol
	}
	return traffic.HTTP1(t.KeepAlive)
}

// RigSettings say whether the machine settings a run changed for its
// duration (Cluster.CPUWeight) were put back.
type RigSettings struct {
	// Restored is true once the run put every setting back.
	Restored bool `json:"restored,omitempty"`
}

// ReadRunInfo reads dir's run.json.
func ReadRunInfo(dir string) (*RunInfo, error) {
	path := filepath.Join(dir, runfile.RunFile)
	b, err := runfile.Read(dir, runfile.RunFile, 0)
	if err != nil {
		return nil, err
	}
	var ri RunInfo
	if err := json.Unmarshal(b, &ri); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if ri.Format != RunVersion {
		return nil, fmt.Errorf("%s: format %q, this droprun reads %q", path, ri.Format, RunVersion)
	}
	return &ri, nil
}

// ReadSummary reads the summary.json in dir, as a run or an example
// shipped without its raw data left it, with its intervals set.
func ReadSummary(dir string) (*Summary, error) {
	var sum Summary
	if err := readJSON(dir, runfile.SummaryFile, &sum); err != nil {
		return nil, err
	}
	SetIntervals(&sum)
	return &sum, nil
}

// legacyRunInfo takes the run facts from the summary.json of a run recorded
// before run.json existed; it is never used when run.json is there.
func legacyRunInfo(dir string) (*RunInfo, error) {
	var s RunInfo
	if err := readJSON(dir, runfile.SummaryFile, &s); err != nil {
		return nil, err
	}
	s.Format = RunVersion
	return &s, nil
}

// readJSON decodes the JSON file name in dir into v (runfile.Read); a
// decoding error names the file.
func readJSON(dir, name string, v any) error {
	b, err := runfile.Read(dir, name, 0)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, name), err)
	}
	return nil
}

// runInfo returns dir's RunInfo, from run.json or, for older runs, their
// summary.json, and a warning when it had to fall back.
func runInfo(dir string) (*RunInfo, string, error) {
	ri, err := ReadRunInfo(dir)
	if err == nil {
		return ri, "", nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, "", err
	}
	if ri, lerr := legacyRunInfo(dir); lerr == nil {
		return ri, fmt.Sprintf("%s is missing (a run recorded by an older droprun): its cluster and traffic facts come from %s", runfile.RunFile, runfile.SummaryFile), nil
	}
	return &RunInfo{Format: RunVersion}, fmt.Sprintf("%s is missing: where and how the run ran is unknown", runfile.RunFile), nil
}
