package stats

// DefaultConfidence is droprun's one confidence level: every interval the
// report, the plots and the sweeps show is at it, and check's and
// advise's --confidence default to it. 0.95 is 95%.
const DefaultConfidence = 0.95
