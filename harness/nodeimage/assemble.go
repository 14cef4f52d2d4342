package nodeimage

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// nodeEntrypoint is kind's node entrypoint (set again after the build
// container's sleep).
const nodeEntrypoint = `["/usr/local/bin/entrypoint", "/sbin/init"]`

// assemble imports the node root filesystem into docker, preloads the
// images into its containerd inside a privileged build container, commits
// that, and adds the metadata docker import cannot take (STOPSIGNAL) and
// the inputs label with a one-line-per-instruction Dockerfile.
func (b *builder) assemble(ctx context.Context) (bool, error) {
	short := strings.TrimPrefix(b.inputs, "sha256:")[:12]
	baseRef := "droprun/node-build:base-" + short
	commitRef := "droprun/node-build:commit-" + short
	defer func() {
		// The final image keeps the layers; drop the intermediate names.
		_, _ = runCmd(context.Background(), "", nil, "docker", "image", "rm", commitRef, baseRef)
	}()

	// docker import of the staged root filesystem, streamed through tar.
	tarCmd := exec.CommandContext(ctx, "tar", "--numeric-owner", "--xattrs", "-C", b.stage, "-c", ".")
	tarOut, err := tarCmd.StdoutPipe()
	if err != nil {
		return false, err
	}
	var tarErr strings.Builder
	tarCmd.Stderr = &tarErr
	imp := exec.CommandContext(ctx, "docker", "import", "--change", "ENV container=docker", "-", baseRef)
	imp.Stdin = tarOut
	var impOut strings.Builder
	imp.Stdout, imp.Stderr = &impOut, &impOut
	if err := tarCmd.Start(); err != nil {
		return false, err
	}
	if err := imp.Run(); err != nil {
		_ = tarCmd.Wait()
		return false, fmt.Errorf("docker import: %w: %s", err, impOut.String())
	}
	if err := tarCmd.Wait(); err != nil {
		return false, fmt.Errorf("tar of the node root filesystem: %w: %s", err, tarErr.String())
	}

	// A privileged build container runs containerd to import the images
	// (kind's own node image build does the same).
	container := "droprun-node-build-" + short
	_, _ = runCmd(ctx, "", nil, "docker", "rm", "-f", container)
	if _, err := runCmd(ctx, "", nil, "docker", "run", "-d", "--privileged", "--name", container,
		"--entrypoint", "sleep", baseRef, "infinity"); err != nil {
		return false, fmt.Errorf("start the build container (is the runc wrapper in place where CAP_SYS_RESOURCE is missing? droprun doctor): %w", err)
	}
	defer func() { _, _ = runCmd(context.Background(), "", nil, "docker", "rm", "-f", "-v", container) }()
	if _, err := runCmd(ctx, "", nil, "docker", "exec", container, "bash", "-c",
		"nohup containerd > /var/log/containerd-build.log 2>&1 &"); err != nil {
		return false, err
	}
	if err := waitFor(ctx, 60*time.Second, func() error {
		_, err := runCmd(ctx, "", nil, "docker", "exec", container, "ctr", "version")
		return err
	}); err != nil {
		log, _ := runCmd(ctx, "", nil, "docker", "exec", container, "cat", "/var/log/containerd-build.log")
		return false, fmt.Errorf("containerd in the build container did not start: %w\n%s", err, log)
	}
	for _, ref := range b.preloaded {
		f, err := os.Open(filepath.Join(b.imageDir, imageFileName(ref)))
		if err != nil {
			return false, err
		}
		cmd := exec.CommandContext(ctx, "docker", "exec", "-i", container,
			"ctr", "--namespace=k8s.io", "images", "import", "--label=io.cri-containerd.pinned=pinned",
			"--all-platforms", "--no-unpack", "--digests", "-")
		cmd.Stdin = f
		out, err := cmd.CombinedOutput()
		f.Close()
		if err != nil {
			return false, fmt.Errorf("import %s into the node's containerd: %w: %s", ref, err, out)
		}
	}
	list, err := runCmd(ctx, "", nil, "docker", "exec", container, "ctr", "--namespace=k8s.io", "images", "list", "-q")
	if err != nil {
		return false, err
	}
	if missing := missingImages(list, b.preloaded); len(missing) > 0 {
		return false, fmt.Errorf("the node's containerd lacks %s after the import; it has:\n%s", strings.Join(missing, ", "), list)
	}
	if _, err := runCmd(ctx, "", nil, "docker", "exec", container, "bash", "-c",
		// sleep, the container's PID 1, reaps nothing: an exited containerd
		// stays a zombie (state Z), which counts as stopped.
		`pkill -x containerd; for i in $(seq 100); do ps -C containerd -o stat= | grep -qv '^Z' || exit 0; sleep 0.2; done; exit 1`); err != nil {
		return false, fmt.Errorf("stop containerd in the build container: %w", err)
	}
	_, _ = runCmd(ctx, "", nil, "docker", "exec", container, "rm", "-rf", "/var/log/containerd-build.log", "/run/containerd")
	if _, err := runCmd(ctx, "", nil, "docker", "commit", "--change", "ENTRYPOINT "+nodeEntrypoint,
		container, commitRef); err != nil {
		return false, err
	}

	// docker commit and import reject STOPSIGNAL: add it, the entrypoint
	// and the labels in a Dockerfile layer.
	tmp, err := b.c.tmpDir("dockerfile")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "Dockerfile"), []byte(finalDockerfile(commitRef, b.inputs, b.v.Kubernetes)), 0o644); err != nil {
		return false, err
	}
	if _, err := runCmd(ctx, tmp, append(os.Environ(), "DOCKER_BUILDKIT=0"), "docker", "build", "-t", b.ref, tmp); err != nil {
		return false, err
	}
	return false, nil
}

// finalDockerfile adds what docker import/commit cannot set to the
// committed node image.
func finalDockerfile(from, inputs, kube string) string {
	return fmt.Sprintf(`FROM %s
ENV container=docker
STOPSIGNAL SIGRTMIN+3
ENTRYPOINT %s
LABEL %s=%q %s=%q
`, from, nodeEntrypoint, LabelInputs, inputs, labelKubernetes, kube)
}

// missingImages returns the wanted references absent from the output of
// `ctr images list -q`. ctr names docker.io images in full.
func missingImages(list string, want []string) []string {
	have := map[string]bool{}
	for _, l := range strings.Fields(list) {
		have[l] = true
	}
	var missing []string
	for _, w := range want {
		if !have[w] && !have["docker.io/"+w] {
			missing = append(missing, w)
		}
	}
	return missing
}

// waitFor polls cond until it succeeds or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("gave up after %s: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
