package scenario

import (
	"errors"
	"fmt"
	"strings"

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
		found := false
		for _, a := range archives {
			found = found || a.Has(ref)
		}
		if found {
			continue
		}
		held := make([]string, len(archives))
		for j, a := range archives {
			held[j] = fmt.Sprintf("%s holds %s", a.Path, a.Describe())
		}
		full, _ := image.FullName(ref)
		v.add(fmt.Sprintf("app.custom.images[%d]", i), fmt.Sprintf("%q (%s) is in none of app.custom.imageArchives: %s", ref, full, strings.Join(held, "; ")),
			"name one of the images the archives hold, or add the archive that holds it (docker save IMAGE -o FILE.tar)")
	}
	if len(v.errs) > 0 {
		return nil, v.errs
	}
	return archives, nil
}
