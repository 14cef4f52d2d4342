package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/droprun/droprun"
	"github.com/droprun/droprun/harness/scenario"
)

func newScenariosCmd(s streams) *cobra.Command {
	var export string
	cmd := &cobra.Command{
		Use:   "scenarios [NAME | README]",
		Short: "List the scenarios shipped with droprun, print one, or print the scenario format",
		Long: `List the scenarios built into droprun, one line each: its name and what it
measures. Wherever a command takes a SCENARIO (run, validate, render, deploy),
a shipped scenario's name works too, from any directory:

  droprun run demo
  droprun render --variant the-trap --initial the-trap

A file on disk wins over a shipped scenario of the same name. With NAME
(demo, demo.yaml or scenarios/demo.yaml), print that scenario's file; with
--export DIR, write it into DIR with the example manifests it names, to edit
and run from there (its paths are then relative to DIR/NAME.yaml):

  droprun scenarios compare-all > mine.yaml
  droprun scenarios custom-app --export mine/

droprun scenarios README prints the scenario format: every field, its
default, and the shipped scenarios.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				if export != "" {
					return usageError("--export needs the NAME of a shipped scenario")
				}
				return listScenarios(s.Out)
			}
			if isReadme(args[0]) {
				if export != "" {
					return usageError("--export writes a scenario, not the README: give a scenario's NAME")
				}
				data, err := fs.ReadFile(droprun.Scenarios(), readmeFile)
				if err != nil {
					return err
				}
				_, err = s.Out.Write(data)
				return err
			}
			name, ok := shippedName(args[0])
			if !ok {
				return usageError("%q is not a shipped scenario (shipped: %s; README prints the format)", args[0], strings.Join(shippedNames(), ", "))
			}
			if export != "" {
				return exportScenario(s.Out, name, export)
			}
			data, err := fs.ReadFile(droprun.Scenarios(), name+".yaml")
			if err != nil {
				return err
			}
			_, err = s.Out.Write(data)
			return err
		},
	}
	cmd.Flags().StringVar(&export, "export", "", "write the scenario NAME and the example manifests it names into this directory (created if missing; existing files are not overwritten)")
	return cmd
}

// readmeFile is the scenario format's documentation among the shipped
// scenarios.
const readmeFile = "README.md"

// isReadme reports whether arg asks for the shipped README.
func isReadme(arg string) bool {
	return arg == "README" || arg == readmeFile || arg == "scenarios/"+readmeFile
}

// exportScenario writes shipped scenario name into dir as NAME.yaml, with
// every manifest its variants name at the same path relative to it, so
// the copy loads from disk as the shipped one does from droprun. Existing
// files are left alone: the export fails before writing anything.
func exportScenario(w io.Writer, name, dir string) error {
	fsys := droprun.Scenarios()
	sc, err := scenario.LoadFS(fsys, name+".yaml")
	if err != nil {
		// The shipped set is tested to load; say which one broke.
		return fmt.Errorf("shipped scenario %s: %w", name, err)
	}
	// LoadFS resolved the manifests to their paths in fsys, which are
	// relative to the scenario (it sits at the root).
	files := []string{name + ".yaml"}
	for _, v := range sc.Variants {
		if v.Manifest != "" && !slices.Contains(files, v.Manifest) {
			files = append(files, v.Manifest)
		}
	}
	for _, f := range files {
		dst := filepath.Join(dir, filepath.FromSlash(f))
		if _, err := os.Lstat(dst); err == nil {
			return usageError("--export %s: %s exists; droprun overwrites nothing: remove it or export into another directory", dir, dst)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// Every write goes through dir as an os.Root and creates its file
	// exclusively: a symlink planted under dir (even one made after the
	// check above) is neither followed out of dir nor written through.
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return err
		}
		if d := path.Dir(f); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return fmt.Errorf("--export %s: %w", dir, err)
			}
		}
		dst := filepath.Join(dir, filepath.FromSlash(f))
		out, err := root.OpenFile(f, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return fmt.Errorf("--export %s: %w (droprun overwrites nothing and follows no link out of the directory)", dir, err)
		}
		_, err = out.Write(data)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(w, dst)
	}
	fmt.Fprintf(w, "edit %s (its paths, image archives and a kubeconfig included, are relative to it), then: droprun validate %s\n",
		filepath.Join(dir, name+".yaml"), filepath.Join(dir, name+".yaml"))
	return nil
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
	fmt.Fprintln(tw, "\nRun one with `droprun run NAME`; `droprun scenarios NAME` prints its file (--export DIR writes it with its manifests);\n`droprun scenarios README` prints the scenario format.")
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
