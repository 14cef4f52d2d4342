// Package scaffold writes a first scenario for the user's own service
// (`droprun init DEPLOYMENT.yaml`): from one Deployment manifest it picks
// the container, its port and the readiness probe's path, and writes a
// scenario that compares the Deployment as shipped with the same
// Deployment plus a native preStop sleep.
//
// The scenario is written from a commented template, since the YAML
// libraries write no comments, and is then loaded and checked exactly as
// `droprun validate` checks a file (scenario.Load, then its image
// archives), so what init writes always validates. Bad input (a manifest
// that is not one Deployment, a container or port that cannot be chosen,
// not two images, a bad archive, a file in the way) is an *InputError,
// found before anything is written.
package scaffold
