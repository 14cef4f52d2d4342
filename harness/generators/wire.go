package generators

import (
	"encoding/json"
	"io"
)

// The keys of a generator's own lines: {"droprun-beat":BeatLine} and
// {"droprun-end":End}. apps/generator writes them (WriteLine), Stream
// reads them.
const (
	BeatKey = "droprun-beat"
	EndKey  = "droprun-end"
)

// PodNameEnv is the variable in which a generator finds its pod's name
// (the Job's downward API): the prefix of its request IDs.
const PodNameEnv = "POD_NAME"

// TokenEnv is the variable in which a generator finds its run's control
// token, and TokenParam the query parameter a start or stop must carry it
// in: another pod that reaches the control port cannot start or stop the
// load. (GET /clock, the readiness probe's, needs none: it changes nothing.)
const (
	TokenEnv   = "DROPRUN_CONTROL_TOKEN"
	TokenParam = "token"
)

// BeatLine is a beat as a generator writes it, every second: when, how
// many results it has written, how far behind schedule it sends
// (nanoseconds), the requests in flight, the cores it used since its
// previous beat, and the longest its goroutines waited for a core since
// then (schedlat; nanoseconds).
type BeatLine struct {
	At       int64   `json:"at"`
	Results  uint64  `json:"results"`
	LagNs    int64   `json:"lagNs"`
	InFlight uint64  `json:"inFlight"`
	CPU      float64 `json:"cpu"`
	SchedNs  int64   `json:"schedNs,omitempty"`
}

// End is a generator's end line: its own totals, and why it stopped when
// droprun did not stop it.
type End struct {
	Results      uint64            `json:"results"`
	ByClass      map[string]uint64 `json:"byClass,omitempty"`
	AskedRate    float64           `json:"askedRate"`
	AchievedRate float64           `json:"achievedRate"`
	MaxLagNs     int64             `json:"maxLagNs"`
	CPU          float64           `json:"cpu"`
	Suspect      []string          `json:"suspect,omitempty"`
	Stopped      string            `json:"stopped,omitempty"`
}

// WriteLine writes {"key":v} and a newline to w in one Write.
func WriteLine(w io.Writer, key string, v any) error {
	b, err := json.Marshal(map[string]any{key: v})
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
