package run

import (
	"time"

	"github.com/droprun/droprun/harness/traffic"
)

// SummaryVersion is the version of summary.json's format.
const SummaryVersion = "droprun.summary/v1"

// Summary is summary.json: what a run measured, one record per variant
// row. It is rebuilt from the raw data (results-*.bin, events.jsonl) by
// Analyze, so it can always be regenerated.
type Summary struct {
	Format   string    `json:"format"`
	Scenario string    `json:"scenario"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Interrupted is true when the run was cancelled; what was measured up
	// to then is kept.
	Interrupted bool `json:"interrupted,omitempty"`
	// Error is the error that ended the run early, if any.
	Error    string           `json:"error,omitempty"`
	Cluster  ClusterInfo      `json:"cluster"`
	Traffic  TrafficInfo      `json:"traffic"`
	Variants []VariantSummary `json:"variants"`
	// Suspect lists the reasons the run's numbers should not be trusted
	// (a control window with failures, a client that could not hold its
	// rate...). Empty when the measurement is clean.
	Suspect []string `json:"suspect,omitempty"`
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
	URL       string `json:"url"`
	Rate      int    `json:"rate"`
	KeepAlive bool   `json:"keepAlive"`
	Method    string `json:"method"`
	Timeout   string `json:"timeout"`
	Target    string `json:"target"`
	Rollouts  int    `json:"rollouts"`
	Settle    string `json:"settle"`
	Control   string `json:"control"`
	Between   string `json:"between"`
	// ClientProcs is the client's GOMAXPROCS during the run.
	ClientProcs int `json:"clientProcs,omitempty"`
}

// VariantSummary is one row: a variant's rollouts and what they dropped.
type VariantSummary struct {
	// Variant is the row name. A variant with `from` gives two rows: the
	// rollout that introduced it (Name + "/introducing") and the later ones.
	Variant string `json:"variant"`
	// Builtin is the built-in variant the scenario asked for ("" for a
	// custom app).
	Builtin string `json:"builtin,omitempty"`
	// Requests is every request sent while this variant was measured
	// (control, rollout windows and tails).
	Requests uint64 `json:"requests"`
	// Drops are the non-2xx outcomes inside this row's rollout windows.
	Drops uint64 `json:"drops"`
	// WindowRequests are the requests inside this row's rollout windows.
	WindowRequests uint64 `json:"windowRequests"`
	// Classes counts every outcome class inside the rollout windows.
	Classes map[traffic.Class]uint64 `json:"classes"`
	// RolloutsWithDrops is how many of the rollouts dropped anything.
	RolloutsWithDrops int `json:"rolloutsWithDrops"`
	// Control is the steady-state window before the first rollout.
	Control Tally `json:"control"`
	// ControlRig is the rig's load during the control window.
	ControlRig *RigSummary `json:"controlRig,omitempty"`
	// SaturatedRollouts counts the rollouts during which the rig was short
	// of CPU (RigSummary.Saturated); Measurable tallies the windows of the
	// other rollouts, the ones the rig could measure.
	SaturatedRollouts int   `json:"saturatedRollouts"`
	Measurable        Tally `json:"measurable"`
	// ExpectedFloor is the failures the rollout windows would show at the
	// control window's failure rate: drops near it are the rig's noise.
	ExpectedFloor float64 `json:"expectedFloor"`
	// Tail counts failures after rollout windows closed (the conntrack
	// tail), apart from the drops.
	Tail Tally `json:"tail"`
	// Outside counts requests outside every window (normally none).
	Outside  Tally            `json:"outside"`
	Rollouts []RolloutSummary `json:"rollouts"`
	Client   ClientSummary    `json:"client"`
	// Gaps are, per deleted pod, the time from deletion requested to its
	// endpoint leaving the slice.
	Gaps []Gap `json:"gaps,omitempty"`
	// Server sets the pods' own count of what they answered beside the
	// client's, over the variant's whole traffic.
	Server *ServerView `json:"server,omitempty"`
	// HookFailures are Warning events such as FailedPreStopHook.
	HookFailures []string `json:"hookFailures,omitempty"`
	Suspect      []string `json:"suspect,omitempty"`
}

// ServerView is the client's view and the pods' view of one variant's
// traffic, side by side. The pods count from their own counters (scraped
// every second through the API server, and written by each pod as it
// exits into its termination message), probes and scrapes left out.
type ServerView struct {
	// ClientSent and ClientGot2xx are the requests the client sent and
	// the 2xx responses it got.
	ClientSent   uint64 `json:"clientSent"`
	ClientGot2xx uint64 `json:"clientGot2xx"`
	// PodsAnswered and PodsAnswered2xx are the requests the pods say they
	// answered. More 2xx answered than got means answers lost on the way
	// (e.g. the client gave up first); fewer means the pods' counts are
	// incomplete (see Uncertain).
	PodsAnswered    int `json:"podsAnswered"`
	PodsAnswered2xx int `json:"podsAnswered2xx"`
	// Pods is the pods that answered the client; PodsFinal those whose
	// count ends with their own exit totals; Uncertain the pods whose
	// count is not exact.
	Pods         int `json:"pods"`
	PodsFinal    int `json:"podsFinal"`
	Uncertain    int `json:"uncertain"`
	ScrapeErrors int `json:"scrapeErrors"`
}

// RolloutSummary is one rollout.
type RolloutSummary struct {
	N    int    `json:"n"`
	From string `json:"from"`
	To   string `json:"to"`
	// MeasuredVariant is the variant the live pod template was before the
	// rollout, detected from its fields: the pods this rollout deletes.
	MeasuredVariant string `json:"measuredVariant"`
	// LiveTemplate describes what was found in the live pod template.
	LiveTemplate string    `json:"liveTemplate"`
	Start        time.Time `json:"start"`
	// Complete is when the rollout was done and the old pods were gone.
	Complete  time.Time `json:"complete"`
	WindowEnd time.Time `json:"windowEnd"`
	Duration  string    `json:"duration"`
	Window    Tally     `json:"window"`
	Tail      Tally     `json:"tail"`
	// ConntrackFlushed is the stale SYN_SENT entries deleted per node
	// after this rollout's window closed (kind clusters only).
	ConntrackFlushed map[string]int `json:"conntrackFlushed,omitempty"`
	// BaselineWait is how long the run waited for a clean baseline before
	// the next rollout; BaselineClean false means it never got one.
	BaselineWait  string `json:"baselineWait,omitempty"`
	BaselineClean bool   `json:"baselineClean"`
	// Rig is the rig's load during the window (absent in runs recorded
	// before droprun sampled it).
	Rig *RigSummary `json:"rig,omitempty"`
}

// ClientSummary is how well the traffic client held its rate.
type ClientSummary struct {
	AskedRate        float64  `json:"askedRate"`
	AchievedRate     float64  `json:"achievedRate"`
	CPU              float64  `json:"cpu"`
	WorkersExhausted bool     `json:"workersExhausted"`
	Suspect          []string `json:"suspect,omitempty"`
}

// Gap is the deletion-to-endpoint-removal delay of one pod.
type Gap struct {
	Pod             string  `json:"pod"`
	EndpointUnready float64 `json:"endpointUnreadySeconds"`
	EndpointRemoved float64 `json:"endpointRemovedSeconds"`
}

// Failure is one failed request, attributed (failures.jsonl).
type Failure struct {
	Time    time.Time     `json:"t"`
	Variant string        `json:"variant"`
	Phase   Phase         `json:"phase"`
	Rollout int           `json:"rollout,omitempty"`
	Class   traffic.Class `json:"class"`
	Code    uint16        `json:"code"`
	Error   string        `json:"error,omitempty"`
	Latency float64       `json:"latencySeconds"`
	// NearestDeletion is the last pod deletion requested before the
	// request was sent, and SinceDeletion how long before.
	NearestDeletion string  `json:"nearestDeletion,omitempty"`
	SinceDeletion   float64 `json:"sinceDeletionSeconds,omitempty"`
}
