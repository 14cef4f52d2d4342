package engine

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// capSysResource is CAP_SYS_RESOURCE's bit in a capability mask.
const capSysResource = 24

// parseCapField reads a capability mask such as CapBnd from the text of
// /proc/<pid>/status.
func parseCapField(status []byte, field string) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != field {
			continue
		}
		mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		if err != nil {
			return 0, fmt.Errorf("%s %q: %w", field, strings.TrimSpace(v), err)
		}
		return mask, nil
	}
	return 0, fmt.Errorf("no %s line in the process status", field)
}

// hasCap reports whether bit is set in mask.
func hasCap(mask uint64, bit uint) bool { return mask&(1<<bit) != 0 }

// boundingSet returns this process's capability bounding set.
func boundingSet() (uint64, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	return parseCapField(status, "CapBnd")
}

// needsRuncWrapper reports whether privileged containers need the runc
// wrapper here: the bounding set lacks CAP_SYS_RESOURCE.
func needsRuncWrapper() (bool, uint64, error) {
	bnd, err := boundingSet()
	if err != nil {
		return false, 0, err
	}
	return !hasCap(bnd, capSysResource), bnd, nil
}
