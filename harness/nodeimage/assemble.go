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
	if err := b.importStage(ctx, baseRef); err != nil {
		return false, err
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
	if err := startBuildContainerd(ctx, container); err != nil {
		return false, err
	}
	if err := b.preloadImages(ctx, container); err != nil {
		return false, err
	}
	if err := commitBuildContainer(ctx, container, commitRef); err != nil {
		return false, err
	}
	if err := b.buildFinalImage(ctx, commitRef); err != nil {
		return false, err
	}
	return false, nil
}

// importStage docker imports the staged root filesystem (b.stage) as ref,
// streamed through tar.
func (b *builder) importStage(ctx context.Context, ref string) error {
	tarCmd := exec.CommandContext(ctx, "tar", "--numeric-owner", "--xattrs", "-C", b.stage, "-c", ".")
	tarOut, err := tarCmd.StdoutPipe()
	if err != nil {
		return err
	}
	var tarErr strings.Builder
	tarCmd.Stderr = &tarErr
	imp := exec.CommandContext(ctx, "docker", "import", "--change", "ENV container=docker", "-", ref)
	imp.Stdin = tarOut
	var impOut strings.Builder
	imp.Stdout, imp.Stderr = &impOut, &impOut
	if err := tarCmd.Start(); err != nil {
		return err
	}
	if err := imp.Run(); err != nil {
		_ = tarCmd.Wait()
		return fmt.Errorf("docker import: %w: %s", err, impOut.String())
	}
	if err := tarCmd.Wait(); err != nil {
		return fmt.Errorf("tar of the node root filesystem: %w: %s", err, tarErr.String())
	}
	return nil
}

// startBuildContainerd starts containerd in the build container and waits
// up to a minute for it to answer; its log comes with the error.
func startBuildContainerd(ctx context.Context, container string) error {
	if _, err := runCmd(ctx, "", nil, "docker", "exec", container, "bash", "-c",
		"nohup containerd > /var/log/containerd-build.log 2>&1 &"); err != nil {
		return err
	}
	if err := waitFor(ctx, 60*time.Second, func() error {
		_, err := runCmd(ctx, "", nil, "docker", "exec", container, "ctr", "version")
		return err
	}); err != nil {
		log, _ := runCmd(ctx, "", nil, "docker", "exec", container, "cat", "/var/log/containerd-build.log")
		return fmt.Errorf("containerd in the build container did not start: %w\n%s", err, log)
	}
	return nil
}

// preloadImages imports every image of b.preloaded, pinned, into the
// build container's containerd and checks they are all listed after.
func (b *builder) preloadImages(ctx context.Context, container string) error {
	for _, ref := range b.preloaded {
		f, err := os.Open(filepath.Join(b.imageDir, imageFileName(ref)))
		if err != nil {
			return err
		}
		cmd := exec.CommandContext(ctx, "docker", "exec", "-i", container,
			"ctr", "--namespace=k8s.io", "images", "import", "--label=io.cri-containerd.pinned=pinned",
			"--all-platforms", "--no-unpack", "--digests", "-")
		cmd.Stdin = f
		out, err := cmd.CombinedOutput()
		f.Close()
		if err != nil {
			return fmt.Errorf("import %s into the node's containerd: %w: %s", ref, err, out)
		}
	}
	list, err := runCmd(ctx, "", nil, "docker", "exec", container, "ctr", "--namespace=k8s.io", "images", "list", "-q")
	if err != nil {
		return err
	}
	if missing := missingImages(list, b.preloaded); len(missing) > 0 {
		return fmt.Errorf("the node's containerd lacks %s after the import; it has:\n%s", strings.Join(missing, ", "), list)
	}
	return nil
}

// commitBuildContainer stops containerd in the build container, removes
// its log and runtime state, and commits the container as ref with kind's
// entrypoint.
func commitBuildContainer(ctx context.Context, container, ref string) error {
	if _, err := runCmd(ctx, "", nil, "docker", "exec", container, "bash", "-c",
		// sleep, the container's PID 1, reaps nothing: an exited containerd
		// stays a zombie (state Z), which counts as stopped.
		`pkill -x containerd; for i in $(seq 100); do ps -C containerd -o stat= | grep -qv '^Z' || exit 0; sleep 0.2; done; exit 1`); err != nil {
		return fmt.Errorf("stop containerd in the build container: %w", err)
	}
	_, _ = runCmd(ctx, "", nil, "docker", "exec", container, "rm", "-rf", "/var/log/containerd-build.log", "/run/containerd")
	_, err := runCmd(ctx, "", nil, "docker", "commit", "--change", "ENTRYPOINT "+nodeEntrypoint, container, ref)
	return err
}

// buildFinalImage builds b.ref from the committed image: docker commit and
// import reject STOPSIGNAL, so it, the entrypoint and the labels come in a
// Dockerfile layer.
func (b *builder) buildFinalImage(ctx context.Context, committed string) error {
	tmp, err := b.c.tmpDir("dockerfile")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "Dockerfile"), []byte(finalDockerfile(committed, b.inputs, b.v.Kubernetes)), 0o644); err != nil {
		return err
	}
	_, err = runCmd(ctx, tmp, append(os.Environ(), "DOCKER_BUILDKIT=0"), "docker", "build", "-t", b.ref, tmp)
	return err
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
