package scenario

import (
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// LoadFS is Load for a scenario held in fsys, such as the shipped
// scenarios embedded in droprun (droprun.Scenarios): name is the file's
// slash-separated path in fsys, and errors name it. Its manifests are read
// from fsys, relative to the scenario's folder there; the files other
// parts of droprun open on disk (image archives, a kubeconfig) are
// relative to the working directory, since the scenario has no folder on
// disk. A later Render reads the manifests from fsys too.
func LoadFS(fsys fs.FS, name string) (*Scenario, error) {
	if !fs.ValidPath(name) {
		return nil, fmt.Errorf("reading scenario: %q is not a valid path inside a file system (slash-separated, no leading / or ..)", name)
	}
	return load(fsys, name, path.Dir(name))
}

// resolveInFS resolves a manifest path p of a scenario read from an fs.FS
// against dir, the scenario's folder in it. A path that leaves the FS
// (absolute, ~, or ../ above its root) is a problem at field.
func resolveInFS(v *validator, field string, p *string, dir string) {
	x := *p
	if x == "" {
		return
	}
	j := path.Join(dir, x)
	if strings.HasPrefix(x, "~") || path.IsAbs(x) || !fs.ValidPath(j) {
		v.add(field, fmt.Sprintf("%q is outside the files the scenario was read from", x),
			"name a manifest beside the scenario, relative to it; or export the scenario with its manifests (droprun scenarios NAME --export DIR) and name files on disk from there")
		return
	}
	*p = j
}

// ReadManifest reads a variant's manifest (a path Load or LoadFS
// resolved) from where the scenario came from.
func (s *Scenario) ReadManifest(p string) ([]byte, error) {
	return readFrom(s.files, p, "Deployment manifest")
}
