package imageref

import (
	"fmt"

	"github.com/distribution/reference"
)

// Auto is the node image setting that lets droprun choose (harness/nodeimage's
// Selector): its own cached image, else kind's published one when a
// registry serves it, else its own built offline.
const Auto = "auto"

// DefaultKubernetesVersion is the Kubernetes version of DefaultNodeImage:
// the minor version of kind v0.33.0's default node image
// (kindest/node:v1.37.0), at the newest patch release the Go module proxy
// serves.
const DefaultKubernetesVersion = "v1.37.2"

// DefaultNodeImage is the reference of the node image droprun builds by
// default.
const DefaultNodeImage = "droprun/node:" + DefaultKubernetesVersion

// CheckNode accepts Auto or an image reference with an explicit tag other
// than latest, or a digest: a node image that names no tag would be the
// latest one, whatever that is on the day.
func CheckNode(ref string) error {
	if ref == Auto {
		return nil
	}
	r, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return fmt.Errorf("%q is not an image reference: %w", ref, err)
	}
	if _, ok := r.(reference.Digested); ok {
		return nil
	}
	t, ok := r.(reference.Tagged)
	switch {
	case !ok:
		return fmt.Errorf("%q is not an image reference with a tag or digest", ref)
	case t.Tag() == "latest":
		return fmt.Errorf("%q uses the latest tag", ref)
	}
	return nil
}
