package opchar

import (
	"flag"
	"testing"
)

var runs = flag.Int("opchar.runs", 2000, "simulated runs per cell")

func TestOperatingCharacteristics(t *testing.T) {
	cells := Run(Modes, *runs, 1)
	t.Log("\n" + Markdown(cells))
}
