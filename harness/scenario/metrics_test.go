package scenario

import (
	"strings"
	"testing"
)

// TestCustomMetrics: app.custom.metrics takes its port from the app's,
// /metrics and the code label by default, and every bad field is reported
// at its path.
func TestCustomMetrics(t *testing.T) {
	const head = `apiVersion: droprun/v1alpha1
kind: Scenario
metadata: {name: custom}
variants: [{name: mine, manifest: mine.yaml}]
`
	s, err := Parse("s.yaml", []byte(head+`app: {custom: {images: [a:1, a:2], container: app, port: 9898, metrics: {counter: http_requests_total}}}`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	m := s.App.Custom.Metrics
	if m.Port != 9898 || m.Path != "/metrics" || m.CodeLabel != "code" || m.Counter != "http_requests_total" {
		t.Errorf("defaults: %+v", m)
	}

	_, err = Parse("s.yaml", []byte(head+`app: {custom: {images: [a:1, a:2], container: app, metrics: {port: 70000, path: metrics, codeLabel: "a:b", match: {"status": "200", "bad-label": x}, counter: ""}}}`))
	if err == nil {
		t.Fatal("Parse accepted bad metrics")
	}
	for _, want := range []string{
		"app.custom.metrics.port: 70000 is not a port",
		`app.custom.metrics.path: "metrics" is not an absolute path`,
		"app.custom.metrics.counter: is required",
		`app.custom.metrics.codeLabel: "a:b" is not a Prometheus label name`,
		"app.custom.metrics.match.bad-label: is not a Prometheus label name",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\nlacks %q", err, want)
		}
	}

	_, err = Parse("s.yaml", []byte(head+`app: {custom: {images: [a:1, a:2], container: app, metrics: {counter: x, codeLabel: status, match: {status: "200"}}}}`))
	if err == nil || !strings.Contains(err.Error(), "app.custom.metrics.match.status: is the codeLabel") {
		t.Errorf("match on the code label: err = %v", err)
	}
}
