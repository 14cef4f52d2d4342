// Package report turns a run's summary into what people read: a terminal
// table, Markdown, CSV and JSON, each row with its drop rate and 95%
// interval, and comparisons between variants or runs with their p-values.
// Every output is rendered from a analysis.Summary, which `droprun report`
// rebuilds from the run's raw data.
package report
