package observe

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/droprun/droprun/harness/appmetrics"
)

// parseCounter reads c from a Prometheus text exposition, summed by status
// code under the handler "". Text without the family is zero counts marked
// noCounter: an app that has counted nothing yet, or a wrong name, which
// the pods' view tells apart by whether any scrape had it. A series kept
// by Match without the code label is an error: a wrong codeLabel would
// count everything under the code "".
func parseCounter(text []byte, c appmetrics.Counter) (sample, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return sample{}, fmt.Errorf("parsing metrics: %w", err)
	}
	s := sample{counts: appmetrics.Counts{}}
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
		s.counts.Add("", code, int(math.Round(observations(m))))
	}
	return s, nil
}

// seriesLabels is a series' labels as Prometheus writes them, {a="1",b="2"}.
func seriesLabels(labels map[string]string) string {
	parts := make([]string, 0, len(labels))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
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
