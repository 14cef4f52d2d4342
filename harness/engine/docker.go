package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// ErrNoDockerCLI means the docker command is not installed.
var ErrNoDockerCLI = errors.New("no docker CLI: install it: droprun engine setup (Debian) or install Docker")

// ErrEngineNotRunning means the docker CLI found no engine to talk to.
var ErrEngineNotRunning = errors.New("docker engine not running: start it: droprun engine setup (Debian: installs, configures and starts dockerd), or `systemctl start docker`, or `dockerd > /var/log/dockerd.log 2>&1 &`")

// Info is what `docker info` says about the engine.
type Info struct {
	ServerVersion  string
	DefaultRuntime string
	CgroupVersion  string
	CgroupDriver   string
	DockerRootDir  string
	Runtimes       map[string]json.RawMessage
}

// DockerInfo asks the engine about itself. It returns ErrNoDockerCLI or
// ErrEngineNotRunning (wrapped) when it cannot.
func DockerInfo(ctx context.Context) (*Info, error) {
	if _, err := exec.LookPath("docker"); err != nil {
		return nil, ErrNoDockerCLI
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", "info", "--format", "{{json .}}")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var info Info
	if err := json.Unmarshal(stdout.Bytes(), &info); err != nil || info.ServerVersion == "" || runErr != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" && runErr != nil {
			msg = runErr.Error()
		}
		return nil, fmt.Errorf("%w (docker info: %s)", ErrEngineNotRunning, msg)
	}
	return &info, nil
}

// waitUntil polls cond every interval until it returns true, an error
// other than "not yet", or the timeout passes: apimachinery's poll, as the
// rest of droprun uses, with the timeout named in the error.
func waitUntil(ctx context.Context, timeout, interval time.Duration, cond func(context.Context) (bool, error)) error {
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, cond)
	if wait.Interrupted(err) {
		return fmt.Errorf("not ready after %s: %w", timeout, err)
	}
	return err
}
