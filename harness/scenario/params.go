package scenario

import (
	"fmt"

	"github.com/droprun/droprun/harness/image"
	"github.com/droprun/droprun/harness/variant"
)

// Versions are the two bookshop versions rollouts alternate between.
var Versions = [2]string{"v1", "v2"}

// Params returns what the renderer needs for bookshop variant i at version,
// with every default applied. kind is the built-in variant to render: the
// variant's own, or its From variant for the state before the first
// rollout.
func (s *Scenario) Params(i int, kind, version string) (variant.Params, error) {
	info, ok := variant.Lookup(kind)
	if !ok {
		return variant.Params{}, fmt.Errorf("%q is not a variant (use one of: %s)", kind, variant.NameList())
	}
	w := s.Effective(i)
	flavour := image.FlavourStandard
	if info.Distroless {
		flavour = image.FlavourDistroless
	}
	if w.Flavour != "" {
		flavour = image.Flavour(w.Flavour)
	}
	r := w.Readiness
	p := variant.Params{
		Namespace:                     s.Namespace,
		Name:                          s.Variants[i].Name,
		Info:                          info,
		Image:                         image.Ref(version, flavour),
		Replicas:                      *w.Replicas,
		MaxSurge:                      *w.MaxSurge,
		MaxUnavailable:                *w.MaxUnavailable,
		MinReadySeconds:               *w.MinReadySeconds,
		TerminationGracePeriodSeconds: *w.TerminationGracePeriodSeconds,
		PreStopSeconds:                *w.PreStopSeconds,
		DrainDelay:                    w.DrainDelay.Duration,
		Readiness: variant.Probe{
			InitialDelaySeconds: *r.InitialDelaySeconds,
			PeriodSeconds:       *r.PeriodSeconds,
			TimeoutSeconds:      *r.TimeoutSeconds,
			SuccessThreshold:    *r.SuccessThreshold,
			FailureThreshold:    *r.FailureThreshold,
		},
	}
	if res := w.Resources; res != nil {
		p.Requests, p.Limits = res.Requests, res.Limits
	}
	return p, nil
}

// Index returns the position of the variant named name, or -1.
func (s *Scenario) Index(name string) int {
	for i, v := range s.Variants {
		if v.Name == name {
			return i
		}
	}
	return -1
}
