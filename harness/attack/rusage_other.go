//go:build !unix

package attack

import "time"

// processCPU cannot measure CPU time on this platform.
func processCPU() (time.Duration, bool) { return 0, false }
