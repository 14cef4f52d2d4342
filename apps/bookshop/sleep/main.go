// Command sleep waits for a while and exits 0: `sleep SECONDS`, where SECONDS
// is a number of seconds (5, 2.5) or a Go duration (5s, 1m30s).
//
// It exists for the exec form of a preStop hook,
//
//	lifecycle:
//	  preStop:
//	    exec:
//	      command: ["/sleep", "5"]
//
// in images that have no shell and no coreutils (scratch, distroless), where
// exec: ["sleep", "5"] would fail and the kubelet would send SIGTERM at once.
// Build it static: CGO_ENABLED=0 go build ./apps/bookshop/sleep.
//
// A bad argument prints the usage and exits 2.
package main

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"time"
)

func main() {
	if len(os.Args) != 2 {
		usage("want exactly one argument")
	}
	d, err := parse(os.Args[1])
	if err != nil {
		usage(err.Error())
	}
	time.Sleep(d)
}

func usage(problem string) {
	fmt.Fprintf(os.Stderr, "sleep: %s\nusage: sleep SECONDS   (e.g. 5, 2.5 or a Go duration such as 5s)\n", problem)
	os.Exit(2)
}

// parse reads a non-negative number of seconds or a Go duration.
func parse(s string) (time.Duration, error) {
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(secs) || secs < 0 || secs > math.MaxInt64/float64(time.Second) {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		return time.Duration(secs * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("invalid duration %q", s)
	}
	return d, nil
}
