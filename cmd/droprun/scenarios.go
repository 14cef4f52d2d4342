package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/droprun/droprun"
	"github.com/droprun/droprun/harness/scenario"
)

func newScenariosCmd(s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "scenarios [NAME]",
		Short: "List the scenarios shipped with droprun, or print one",
		Long: `List the scenarios built into droprun, one line each: its name and what it
measures. Wherever a command takes a SCENARIO (run, validate, render, deploy),
a shipped scenario's name works too, from any directory:

  droprun run demo
  droprun render --variant the-trap --initial the-trap

A file on disk wins over a shipped scenario of the same name. With NAME,
print that scenario's file, to start your own from:

  droprun scenarios compare-all > mine.yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 1 {
				data, err := fs.ReadFile(droprun.Scenarios(), args[0]+".yaml")
				if err != nil {
					return usageError("%q is not a shipped scenario (shipped: %s)", args[0], strings.Join(shippedNames(), ", "))
				}
				_, err = s.Out.Write(data)
				return err
			}
			return listScenarios(s.Out)
		},
	}
}

// listScenarios prints every shipped scenario's name and description.
func listScenarios(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tWHAT IT MEASURES")
	for _, n := range shippedNames() {
		sc, err := scenario.LoadFS(droprun.Scenarios(), n+".yaml")
		if err != nil {
			// The shipped set is tested to load; say which one broke.
			return fmt.Errorf("shipped scenario %s: %w", n, err)
		}
		fmt.Fprintf(tw, "%s\t%s\n", n, sc.Metadata.Description)
	}
	fmt.Fprintln(tw, "\nRun one with `droprun run NAME`; `droprun scenarios NAME` prints its file.")
	return tw.Flush()
}

// shippedNames are the shipped scenarios' names (their file names without
// .yaml), sorted.
func shippedNames() []string {
	files, _ := fs.Glob(droprun.Scenarios(), "*.yaml") // the pattern is constant and valid
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = strings.TrimSuffix(f, ".yaml")
	}
	return names
}

// shippedName returns the shipped scenario arg names, if any: NAME,
// NAME.yaml, or scenarios/NAME.yaml (its path in a checkout, so that the
// README's examples work from anywhere).
func shippedName(arg string) (string, bool) {
	name := strings.TrimSuffix(arg, ".yaml")
	if rest, ok := strings.CutPrefix(arg, "scenarios/"); ok {
		if !strings.HasSuffix(rest, ".yaml") {
			return "", false
		}
		name = strings.TrimSuffix(rest, ".yaml")
	}
	if name == "" || strings.Contains(name, "/") {
		return "", false
	}
	_, err := fs.Stat(droprun.Scenarios(), name+".yaml")
	return name, err == nil
}

// loadScenario loads the scenario a command's argument names: a file on
// disk when one exists at that path, otherwise a shipped scenario of that
// name (demo, or scenarios/demo.yaml outside a checkout). Neither is a
// usage error that lists the shipped names.
func loadScenario(arg string) (*scenario.Scenario, error) {
	_, err := os.Stat(arg)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return scenario.Load(arg)
	}
	if name, ok := shippedName(arg); ok {
		return scenario.LoadFS(droprun.Scenarios(), name+".yaml")
	}
	return nil, usageError("%s: no such file, and no shipped scenario of that name (shipped: %s; droprun scenarios describes them)", arg, strings.Join(shippedNames(), ", "))
}
