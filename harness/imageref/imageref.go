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
	return Check(ref)
}

// Check accepts an image reference with an explicit tag other than
// latest, or a digest.
func Check(ref string) error {
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

// Known node image repositories: droprun's own build and kind's published
// images. Any other node image runs privileged on the host as every node
// of the cluster, so a scenario that names one needs the user's consent.
const (
	DroprunNodeRepo = "docker.io/droprun/node"
	KindNodeRepo    = "docker.io/kindest/node"
)

// KnownNode reports whether ref is Auto or an image of droprun's or kind's
// node repository.
func KnownNode(ref string) bool {
	if ref == Auto {
		return true
	}
	r, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return false
	}
	return r.Name() == DroprunNodeRepo || r.Name() == KindNodeRepo
}
