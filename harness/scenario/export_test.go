package scenario

// Fixtures for the external tests (render_test.go, service_test.go,
// archives_ext_test.go), which use harness/testbed and so cannot live in
// this package.
var (
	CustomScenario  = customScenario
	ArchiveScenario = archiveScenario
)

const (
	FsManifest    = fsManifest
	SweepScenario = sweepScenario
)
