package plot

import (
	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/traffic"
)

// BinWidth is the width of every histogram bin: the analysis bins
// timelines and since-deletion failures per BinWidth.
const BinWidth = analysis.BinWidth

// The histograms the analysis hands over, drawn as they are.
type (
	hist   = analysis.Hist
	counts = analysis.Counts
)

// classes is the order classes are stacked in, from the bottom.
var classes = analysis.ClassOrder

// indexOf returns c's index in classes.
func indexOf(c traffic.Class) int { return analysis.IndexOf(c) }
