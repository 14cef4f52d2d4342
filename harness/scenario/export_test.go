package scenario

// Fixtures for the external tests (render_test.go, service_test.go), which
// render through harness/testbed/render and so cannot live in this package.
var CustomScenario = customScenario

const (
	FsManifest    = fsManifest
	SweepScenario = sweepScenario
)
