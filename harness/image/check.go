package image

import (
	"errors"
	"fmt"
	"strings"
)

// Problem is one thing wrong with a set of archives and the images they
// must hold. Field names the input as a scenario does, relative to
// app.custom: imageArchives[N] or images[N].
type Problem struct {
	Field, Msg, Fix string
}

// CheckArchives inspects every archive in paths (Inspect: each must exist
// and be a whole docker-save archive or OCI image layout) and, when there
// are any, checks that each of images is in one of them. It reads every
// archive whole, so it is a step of its own, before any cluster work. It
// returns the archives, in the order given, when every check passed.
func CheckArchives(paths, images []string) ([]*Archive, []Problem) {
	var (
		problems []Problem
		archives []*Archive
	)
	for i, p := range paths {
		a, err := Inspect(p)
		if err != nil {
			msg, fix := err.Error(), ""
			if ae := (*ArchiveError)(nil); errors.As(err, &ae) {
				msg, fix = ae.Path+": "+ae.Msg, ae.Fix
			}
			problems = append(problems, Problem{fmt.Sprintf("imageArchives[%d]", i), msg, fix})
			continue
		}
		archives = append(archives, a)
	}
	if len(problems) > 0 {
		return nil, problems
	}
	if len(archives) == 0 {
		// Without archives the images must be on the nodes already, or
		// pullable by them: nothing here can tell.
		return nil, nil
	}
	for i, ref := range images {
		field := fmt.Sprintf("images[%d]", i)
		if _, err := FullName(ref); err != nil {
			problems = append(problems, Problem{field, err.Error(), "write it as repository:tag, e.g. myapp:1.0"})
			continue
		}
		if _, err := FindIn(archives, ref); err != nil {
			problems = append(problems, Problem{field, err.Error(),
				"name one of the images app.custom.imageArchives hold, or add the archive that holds it (docker save IMAGE -o FILE.tar)"})
		}
	}
	if len(problems) > 0 {
		return nil, problems
	}
	// An archive is loaded whole into every node: a name beyond the app's
	// images could replace one of the node's own (kube-proxy's, say).
	want := map[string]bool{}
	for _, ref := range images {
		full, _ := FullName(ref)
		want[full] = true
	}
	for i, a := range archives {
		var extra []string
		for _, ref := range a.Refs() {
			if !want[ref] {
				extra = append(extra, ref)
			}
		}
		if len(extra) > 0 {
			problems = append(problems, Problem{fmt.Sprintf("imageArchives[%d]", i),
				fmt.Sprintf("%s holds images app.custom.images does not name: %s (an archive is loaded whole into every node, so an extra name could replace one of the node's own images)", a.Path, strings.Join(extra, ", ")),
				"save only the app's images into it (docker save IMAGE_A IMAGE_B -o FILE.tar), or name them in app.custom.images"})
		}
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return archives, nil
}
