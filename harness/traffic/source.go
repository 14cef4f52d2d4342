package traffic

import (
	"time"

	"github.com/droprun/droprun/harness/runfile"
)

// HostOrigin is the origin of the host client's load, whose results file
// names no origin (runfile.ResultsFile).
const HostOrigin = runfile.HostOrigin

// Source is one origin of a variant's load: it sends at its share of the
// rate from Start until Stop, streams every request to its observer as a
// typed Record with its Origin, writes every result to its results file
// (vegeta's encoding), and reports its own pacing, the evidence that it
// held its rate or starved. The host client (Attack) is one; generator
// pods inside the cluster (the issue "Load from inside the cluster"),
// each writing its own results file that the analysis reads beside the
// host's, are built for it.
type Source interface {
	// Origin names the source in its records and its results file's name.
	Origin() string
	// Pacing is how far behind schedule its latest request went out and
	// how many requests are in flight: the rig's saturation evidence.
	Pacing() (lag time.Duration, inFlight uint64)
	// Stop ends the load, waits for the requests in flight, and returns
	// the source's account of what it sent (Stats: asked and achieved
	// rate, classes, its own CPU, why it is suspect).
	Stop() (Stats, error)
}
