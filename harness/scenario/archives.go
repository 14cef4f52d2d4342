package scenario

import (
	"errors"
	"fmt"

	"github.com/droprun/droprun/harness/image"
)

// CheckArchives inspects a custom app's image archives (image.Inspect:
// each must exist and be a whole docker-save archive or OCI image layout)
// and, when there are any, checks that each of app.custom.images is in one
// of them. It reads every archive whole, so it is a separate step from
// Load (render needs no archive): validate and the run's preflight call
// it before any cluster work. It returns the archives, in the order given,
// when every check passed.
func (s *Scenario) CheckArchives() ([]*image.Archive, []FieldError) {
	c := s.App.Custom
	if c == nil {
		return nil, nil
	}
	var (
		v        validator
		archives []*image.Archive
		broken   bool
	)
	for i, p := range c.ImageArchives {
		a, err := image.Inspect(p)
		if err != nil {
			msg, fix := err.Error(), ""
			if ae := (*image.ArchiveError)(nil); errors.As(err, &ae) {
				msg, fix = ae.Path+": "+ae.Msg, ae.Fix
			}
			v.add(fmt.Sprintf("app.custom.imageArchives[%d]", i), msg, fix)
			broken = true
			continue
		}
		archives = append(archives, a)
	}
	if broken {
		return nil, v.errs
	}
	if len(archives) == 0 {
		// Without archives the images must be on the nodes already, or
		// pullable by them: nothing here can tell.
		return nil, nil
	}
	for i, ref := range c.Images {
		if _, err := image.FullName(ref); err != nil {
			v.add(fmt.Sprintf("app.custom.images[%d]", i), err.Error(), "write it as repository:tag, e.g. myapp:1.0")
			continue
		}
		if _, err := image.FindIn(archives, ref); err != nil {
			v.add(fmt.Sprintf("app.custom.images[%d]", i), err.Error(),
				"name one of the images app.custom.imageArchives hold, or add the archive that holds it (docker save IMAGE -o FILE.tar)")
		}
	}
	if len(v.errs) > 0 {
		return nil, v.errs
	}
	return archives, nil
}
