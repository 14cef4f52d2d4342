package appmetrics

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
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
		for _, k := range sortedKeys(c.Match) {
			parts = append(parts, fmt.Sprintf("%s=%q", k, c.Match[k]))
		}
		s += "{" + strings.Join(parts, ",") + "}"
	}
	return s
}

// parseCounter reads c from a Prometheus text exposition, summed by status
// code under the handler "". Text without the family is zero counts marked
// noCounter: an app that has counted nothing yet, or a wrong name, which
// the pods' view tells apart by whether any scrape had it. A series kept
// by Match without the code label is an error: a wrong codeLabel would
// count everything under the code "".
func parseCounter(text []byte, c Counter) (sample, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return sample{}, fmt.Errorf("parsing metrics: %w", err)
	}
	s := sample{counts: Counts{}}
	f := families[c.Name]
	if f == nil {
		if base, ok := strings.CutSuffix(c.Name, "_count"); ok {
			if g := families[base]; g != nil && (g.GetType() == dto.MetricType_HISTOGRAM || g.GetType() == dto.MetricType_SUMMARY) {
				f = g
			}
		}
	}
	if f == nil {
		s.noCounter = true
		return s, nil
	}
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		ok := true
		for k, want := range c.Match {
			ok = ok && labels[k] == want
		}
		if !ok {
			continue
		}
		code, has := labels[c.CodeLabel]
		if !has {
			return sample{}, fmt.Errorf("%s%s has no label %q (app.custom.metrics.codeLabel): name the label that holds the status code, or leave this series out with app.custom.metrics.match",
				f.GetName(), seriesLabels(labels), c.CodeLabel)
		}
		s.counts.add("", code, int(math.Round(observations(m))))
	}
	return s, nil
}

// seriesLabels is a series' labels as Prometheus writes them, {a="1",b="2"}.
func seriesLabels(labels map[string]string) string {
	parts := make([]string, 0, len(labels))
	for _, k := range sortedKeys(labels) {
		parts = append(parts, fmt.Sprintf("%s=%q", k, labels[k]))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// observations is a sample's count: a counter's (or untyped, or gauge)
// value, a histogram's or summary's number of observations.
func observations(m *dto.Metric) float64 {
	switch {
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount())
	case m.Summary != nil:
		return float64(m.GetSummary().GetSampleCount())
	}
	return value(m)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
