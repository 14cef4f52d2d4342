package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/droprun/droprun/harness/engine"
	"github.com/droprun/droprun/harness/nodeimage"
)

func newEngineCmd(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "engine",
		Short: "Set up a container engine (Docker) on a bare Debian machine",
	}
	setup := &cobra.Command{
		Use:   "setup",
		Short: "Install, configure and start dockerd (Debian, as root); a no-op when ready",
		Long: `Install Debian's docker.io, configure and start dockerd, and check it. Safe to
run again: a ready engine is left as it is.

What it configures, and why (see ../shared/ENVIRONMENT.md):
  - "userland-proxy": false, with net.ipv4.conf.all.route_localnet=1, so
    traffic to 127.0.0.1:30080 reaches the NodePort through kernel DNAT; the
    userland proxy cost ~20% of a core at 1,000 req/s and turned resets into
    EOFs, which would blur the failure classes droprun measures;
  - beside route_localnet, always, the localnet guard: an iptables raw-table
    rule that drops packets to 127.0.0.0/8 arriving on any interface but lo,
    so no neighbour reaches what listens on 127.0.0.1 (CVE-2020-8558's
    pattern). route_localnet is set now, never at boot, where the guard
    would be missing: after a reboot, run setup again;
  - only where the host lacks CAP_SYS_RESOURCE in its capability bounding
    set: a runc wrapper (droprun-runc) that drops that capability from each
    container's spec, because every kind node runs privileged and runc
    otherwise fails with "unable to apply caps: operation not permitted".
    A default-runtime of your own in daemon.json is refused, not overwritten.

Each change is recorded before it is made (` + engine.DefaultRecord + `);
'droprun engine teardown' undoes them all.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return engine.Setup(cmd.Context(), engine.SetupOptions{Out: s.Err})
		},
	}
	var td engine.TeardownOptions
	teardown := &cobra.Command{
		Use:   "teardown",
		Short: "Undo every change 'engine setup' made to this host (as root)",
		Long: `Undo every change 'droprun engine setup' made, from the record it wrote
before each change (` + engine.DefaultRecord + `): route_localnet back to its
value, then the localnet guard removed, dockerd's configuration put back (and
dockerd restarted on it), the runc wrapper removed. The packages setup
installed stay unless --remove-packages. It refuses while kind nodes run
(delete their clusters first). 'droprun doctor' lists the recorded changes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			td.Out = s.Err
			return engine.Teardown(cmd.Context(), td)
		},
	}
	teardown.Flags().BoolVar(&td.RemovePackages, "remove-packages", false, "also apt-get remove the packages setup installed (docker.io, iptables)")
	cmd.AddCommand(setup, teardown)
	return cmd
}

func newDoctorCmd(s streams) *cobra.Command {
	var o engine.DoctorOptions
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check what droprun needs on this machine, with the fix for each problem",
		Long: `Check the container engine, the capabilities privileged containers need, the
cgroup version, a docker CPU weight left lowered by a killed run,
route_localnet and the userland proxy, free host ports, free disk and the
node image, and print the fix for each problem. It changes nothing.

For the node image it says which one a new cluster would use and why: with
auto, droprun's cached image, else kind's published image when a registry
serves it (checked with a short timeout; nothing is pulled), else droprun's
image built offline (about 15 min on 2 cores the first time).

Exit status: 0 when every check passes, 1 otherwise.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := nodeimage.CheckRef(o.NodeImage); err != nil {
				return usageError("--node-image: %v", err)
			}
			r := engine.Doctor(cmd.Context(), o)
			if err := r.Print(s.Out); err != nil {
				return err
			}
			if !r.OK() {
				return &exitError{code: 1}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.NodeImage, "node-image", nodeimage.Auto, "the node image to check: auto (droprun's cached image, else kind's published one when a registry serves it, else the offline build) or an image reference")
	cmd.Flags().IntVar(&o.HostPort, "host-port", engine.DefaultHostPort, "the first web host port; this+2k (web) and this+1+2k (gateway) for each of the 3 nodes must be free on 127.0.0.1 (or held by droprun's cluster)")
	return cmd
}

func newNodeImageCmd(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "node-image",
		Short: "Build the kind node image offline",
	}
	var o nodeimage.Options
	build := &cobra.Command{
		Use:   "build",
		Short: "Build the kind node image from the Go module proxy and Debian packages (a no-op when cached)",
		Long: `Build a kind node image without any container registry: Kubernetes built from
the k8s.io/kubernetes module, containerd, runc, crictl, CNI plugins, etcd and
CoreDNS from the Go module proxy, a Debian root filesystem from debootstrap,
kind's own base-image files, and every image kubeadm and the pod network need,
preloaded into the node's containerd so nothing is ever pulled.

Every artifact is cached under the user's cache directory (~/.cache/droprun);
a second build with the same inputs is a no-op. Cold, on a fresh machine with
2 cores, it takes about 15 min (the Kubernetes binaries 8 of them); longer
when other work shares the cores.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Out = s.Err
			res, err := nodeimage.Build(cmd.Context(), o)
			if err != nil {
				return err
			}
			state := "built"
			if res.UpToDate {
				state = "up to date"
			}
			fmt.Fprintf(s.Out, "%s %s in %s\n", res.Image, state, res.Duration.Round(1e9))
			return nil
		},
	}
	build.Flags().StringVar(&o.Image, "image", "", "tag for the image (default "+nodeimage.DefaultImage+")")
	build.Flags().BoolVar(&o.Force, "force", false, "rebuild the image even when one with the same inputs exists (cached artifacts are reused)")
	cmd.AddCommand(build)
	return cmd
}
