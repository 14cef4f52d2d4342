package testbed

import (
	"github.com/droprun/droprun/harness/image"
	"github.com/droprun/droprun/harness/scenario"
)

// Preflight checks what Prepare needs of the user's input, before any
// cluster work, so a bad input fails in a moment rather than after a
// cluster was created: a custom app's image archives must exist, be whole
// docker-save archives or OCI image layouts, and hold app.custom.images.
// Its error is a *scenario.Errors. It returns the inspected archives.
func Preflight(sc *scenario.Scenario) ([]*image.Archive, error) {
	archives, errs := sc.CheckArchives()
	if len(errs) > 0 {
		return nil, &scenario.Errors{File: "scenario " + sc.Metadata.Name, List: errs}
	}
	return archives, nil
}
