package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

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
  droprun scenarios                     the shipped scenarios: droprun run demo runs one
  droprun init deploy.yaml --image ... --image ...   a scenario for your own Deployment
  droprun validate scenarios/*.yaml     check scenario files
  droprun render --variant prestop-sleep   the manifests droprun applies
  droprun image build                   build the bookshop images, offline
  droprun run sweep-prestop; droprun advise RUN_DIR   how long your preStop must be`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	// Inherited by every subcommand (cobra asks the parents): an unknown
	// flag or a bad flag value is a usage error.
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return withUsageHint(c, usageError("%w", err)) })
	root.AddCommand(
		newInitCmd(s),
		newValidateCmd(s),
		newRenderCmd(s),
		newImageCmd(s),
		newVariantsCmd(s),
		newScenariosCmd(s),
		newClusterCmd(s),
		newDeployCmd(s),
		newRunCmd(s),
		newReportCmd(s),
		newPackCmd(s),
		newCheckCmd(s),
		newCompareCmd(s),
		newHistoryCmd(s),
		newAdviseCmd(s),
		newEngineCmd(s),
		newDoctorCmd(s),
		newNodeImageCmd(s),
	)
	// cobra adds its help and completion commands when it executes; add
	// them now (it keeps them then) so that they are mapped like the rest.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	mapUsageErrors(root)
	return root
}

// mapUsageErrors makes every usage error of c and its subcommands exit 2
// with a hint, whatever each command's file does:
//   - an argument error (cobra.ExactArgs and the like) becomes a usage
//     error;
//   - a command with subcommands (the root, cluster, image...) rejects an
//     unknown subcommand, and a missing one below the root: cobra would
//     print the help and exit 0 (the root alone still prints its help);
//   - `help` rejects a topic that is not a command;
//   - a usage error a command returns gets the hint of that command.
func mapUsageErrors(c *cobra.Command) {
	switch {
	case c.HasSubCommands() && !c.Runnable():
		c.Args = unknownSubcommand
		c.RunE = func(c *cobra.Command, _ []string) error {
			if !c.HasParent() {
				return c.Help()
			}
			return usageError("%s needs a command: %s", strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" "), strings.Join(subcommandNames(c), ", "))
		}
	case c.HasParent() && !c.Parent().HasParent() && c.Name() == "help" && c.Args == nil:
		c.Args = helpTopic
	}
	validate := c.Args
	if validate == nil {
		validate = cobra.ArbitraryArgs
	}
	c.Args = func(c *cobra.Command, args []string) error {
		err := validate(c, args)
		if err == nil {
			return nil
		}
		var ee *exitError
		if !errors.As(err, &ee) {
			// cobra's own: "accepts 1 arg(s), received 0", or cobra.NoArgs's
			// "unknown command" for a command that has none.
			name := strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ")
			if !c.HasSubCommands() && len(args) > 0 && strings.HasPrefix(err.Error(), "unknown command") {
				err = usageError("%s takes no arguments, got %q", name, args)
			} else {
				err = usageError("%s: %w", name, err)
			}
		}
		return withUsageHint(c, err)
	}
	if run := c.RunE; run != nil {
		c.RunE = func(c *cobra.Command, args []string) error { return withUsageHint(c, run(c, args)) }
	}
	for _, sub := range c.Commands() {
		mapUsageErrors(sub)
	}
}

// withUsageHint gives a usage error in err the hint of c: its usage line
// and where its help is. Other errors pass as they are.
func withUsageHint(c *cobra.Command, err error) error {
	var ee *exitError
	if !errors.As(err, &ee) || !ee.usage || ee.hint != "" {
		return err
	}
	ee.hint = fmt.Sprintf("run '%s --help' for usage", c.CommandPath())
	if !c.HasSubCommands() {
		ee.hint = fmt.Sprintf("usage: %s\n%s", c.UseLine(), ee.hint)
	}
	return err
}

// unknownSubcommand is the Args of a command with subcommands: any
// argument left is a subcommand that does not exist.
func unknownSubcommand(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
	if sug := c.SuggestionsFor(args[0]); len(sug) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(sug, " or "))
	} else {
		msg += " (commands: " + strings.Join(subcommandNames(c), ", ") + ")"
	}
	return usageError("%s", msg)
}

// helpTopic is the Args of `help`: its arguments must name a command.
func helpTopic(c *cobra.Command, args []string) error {
	if _, rest, err := c.Root().Find(args); err != nil || len(rest) > 0 {
		return usageError("unknown help topic %q: name a command, e.g. droprun help check", strings.Join(args, " "))
	}
	return nil
}

// subcommandNames lists c's subcommands as its help does.
func subcommandNames(c *cobra.Command) []string {
	var names []string
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	return names
}
