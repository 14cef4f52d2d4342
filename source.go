// Package droprun carries the parts of droprun's own source tree that an
// installed binary needs at run time, so that `go install
// github.com/droprun/droprun/cmd/droprun` gives a droprun that works from
// any directory:
//
//   - Source: go.mod, go.sum and the programs droprun runs in the cluster:
//     the bookshop app with its sleep program, which harness/image
//     compiles into the demo images, the pod network's CNI plugin
//     (apps/cni) that the offline node image carries, and the
//     listener-close prober (apps/closeprobe) a run puts in a node, and
//     the generator (apps/generator, with the client and the line format
//     it shares with droprun, harness/traffic, harness/attack and
//     harness/generators)
//     that sends load from inside the cluster;
//   - Scenarios: the shipped scenario files, reachable by name
//     (`droprun run demo`).
//
// Both are embedded with go:embed, so they are always the source the binary
// was built from.
package droprun

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
)

// source is the subset of the module droprun compiles at run time: the
// module files and the in-cluster main packages. Test files are embedded
// too (a pattern cannot exclude them) and filtered out by Source.
//
//go:embed go.mod go.sum apps/bookshop/*.go apps/bookshop/sleep/*.go apps/cni/*.go apps/closeprobe/*.go apps/generator/*.go harness/generators/*.go harness/schedlat/*.go harness/traffic/*.go harness/attack/*.go harness/runfile/*.go harness/atomicfile/*.go
var source embed.FS

// scenarios are the shipped scenario files with their README and the
// example manifests they name.
//
//go:embed scenarios/*.yaml scenarios/README.md scenarios/examples
var scenarios embed.FS

// Source returns the embedded module subset: go.mod, go.sum,
// apps/bookshop, apps/bookshop/sleep, apps/cni, apps/closeprobe,
// apps/generator, harness/generators, harness/schedlat,
// harness/traffic and harness/attack, without test files, at the same paths as in the source
// tree.
func Source() fs.FS {
	return noTests{source}
}

// ExtractSource copies the module src (Source(), or a test's own module)
// into dir, which must not exist yet, so go commands can build in it. It
// checks that src holds a go.mod, so a wrong src fails here and not in the
// compiler. Run go in dir with SourceBuildEnv added to the environment.
func ExtractSource(src fs.FS, dir string) error {
	if _, err := fs.Stat(src, "go.mod"); err != nil {
		return fmt.Errorf("the source to extract has no go.mod: %w", err)
	}
	if err := os.CopyFS(dir, src); err != nil {
		return fmt.Errorf("extracting droprun's source into %s: %w", dir, err)
	}
	return nil
}

// SourceBuildEnv is what go commands that build an extracted source add to
// the caller's environment. The copy stands alone: the caller's go.work or
// GOFLAGS (-mod=vendor, say) must not apply to it. go.sum is complete, so
// -mod=readonly needs no change to go.mod; modules missing from the module
// cache come from GOPROXY as usual.
func SourceBuildEnv() []string {
	return []string{"GOWORK=off", "GOFLAGS=-mod=readonly"}
}

// Scenarios returns the shipped scenarios, rooted at the scenarios folder:
// demo.yaml, compare-all.yaml, README.md, examples/...
func Scenarios() fs.FS {
	sub, err := fs.Sub(scenarios, "scenarios")
	if err != nil {
		// fs.Sub fails only for an invalid path, and this one is constant.
		panic(err)
	}
	return sub
}

// noTests hides _test.go files, which a build of the app never needs.
type noTests struct{ fsys embed.FS }

func (n noTests) Open(name string) (fs.File, error) {
	if isTest(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return n.fsys.Open(name)
}

// ReadDir lists a directory without its test files (fs.WalkDir uses it).
func (n noTests) ReadDir(name string) ([]fs.DirEntry, error) {
	entries, err := n.fsys.ReadDir(name)
	if err != nil {
		return nil, err
	}
	kept := entries[:0:0]
	for _, e := range entries {
		if !isTest(path.Join(name, e.Name())) {
			kept = append(kept, e)
		}
	}
	return kept, nil
}

func isTest(name string) bool { return strings.HasSuffix(name, "_test.go") }
