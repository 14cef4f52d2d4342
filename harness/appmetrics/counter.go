package appmetrics

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Counter names the request counter of an app other than bookshop: a
// metric family in its Prometheus text exposition, the label holding the
// status code, and label values a series must have to count (to leave out
// the kubelet's probes and the collector's scrapes, say). Such an app
// writes no exit totals, so its pods are counted from scrapes alone: a
// pod's last scrape before it exits can miss its final requests, and the
// pods' view is a lower bound.
type Counter struct {
	// Name is the family, e.g. http_requests_total. For a histogram or a
	// summary (named with or without its _count suffix) the number of
	// observations is read.
	Name string
	// CodeLabel is the label with the status code, e.g. code or status.
	CodeLabel string
	// Match keeps only the series whose labels have these values.
	Match map[string]string
}

// String describes the counter for reports: its name and match.
func (c Counter) String() string {
	s := c.Name
	if len(c.Match) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(c.Match)) {
			parts = append(parts, fmt.Sprintf("%s=%q", k, c.Match[k]))
		}
		s += "{" + strings.Join(parts, ",") + "}"
	}
	return s
}
