package main

import (
	"io"

	"github.com/spf13/cobra"
)

// streams are where a command reads and writes, injected so that commands
// can be tested with buffers.
type streams struct {
	In       io.Reader
	Out, Err io.Writer
}

func newRootCmd(s streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "droprun",
		Short: "Reproduce, measure and compare the requests a Kubernetes rolling update drops",
		Long: `droprun makes a race measurable. When a pod is deleted, the kubelet sends
SIGTERM at once while the removal of the pod's endpoint is still travelling to
every node's kube-proxy. An app that dies on SIGTERM refuses the requests still
routed to it: the client sees 000 (or a proxy's 502) while
'kubectl rollout status' reports success.

droprun deploys the bookshop demo app (or your own Deployment) in shutdown
variants, drives rollouts under high-rate traffic, and counts every dropped
request against the rollout that caused it.

Start with:
  droprun variants                      what each shutdown variant is expected to show
  droprun validate scenarios/*.yaml     check scenario files
  droprun render --variant prestop-sleep   the manifests droprun applies
  droprun image build                   build the bookshop images, offline`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError("%w", err) })
	root.AddCommand(
		newValidateCmd(s),
		newRenderCmd(s),
		newImageCmd(s),
		newVariantsCmd(s),
		newClusterCmd(s),
		newDeployCmd(s),
		newRunCmd(s),
		newReportCmd(s),
		newCheckCmd(s),
		newCompareCmd(s),
		newEngineCmd(s),
		newDoctorCmd(s),
		newNodeImageCmd(s),
	)
	return root
}
