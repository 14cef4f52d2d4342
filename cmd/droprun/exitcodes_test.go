package main

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/droprun/droprun/harness/analysis/analysistest"
)

// exitCase is one invocation and the exit code the README promises for it.
type exitCase struct {
	name string
	args []string
	code int
	// hint: the command whose "run '... --help'" hint stderr must show (a
	// usage error); "" checks nothing.
	hint string
	// out, err: text stdout / stderr must contain.
	out, err string
}

// commandCases says how to break each command's usage. Commands that
// need docker or a cluster get only rows that fail before they touch
// anything.
type commandCases struct {
	// tooFew and tooMany are argument lists with too few and too many
	// positional arguments (nil: the command has no such bound).
	tooFew, tooMany []string
	// more are the command's own cases (args start with the command).
	more []exitCase
}

// syntheticRunJSON is the run.json of the synthetic run (as in
// harness/analysis's tests).
const syntheticRunJSON = `{"format":"droprun.run/v1","scenario":"synthetic","started":"2026-01-02T03:04:00Z","finished":"2026-01-02T03:05:00Z",
"cluster":{"name":"droprun","kind":true,"nodes":3,"droprun":"test"},
"traffic":{"url":"http://127.0.0.1:30080/version","rate":100,"keepAlive":false,"method":"GET","timeout":"2s","target":"nodeport","rollouts":2,"settle":"2s","control":"2s","between":"1s"}}`

// exitCases are the rows, by command path without "droprun" ("" is the
// root). Every command in the tree must have one.
func exitCases(t *testing.T) map[string]commandCases {
	run := analysistest.Write(t, analysistest.Run{RunJSON: syntheticRunJSON})
	packRun := analysistest.Write(t, analysistest.Run{RunJSON: syntheticRunJSON}) // pack's own: packing changes it
	notRun := t.TempDir()
	missing := filepath.Join(t.TempDir(), "missing")
	badScenario := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(badScenario, []byte("apiVersion: droprun/v1alpha1\nkind: Scenario\nnope: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lbScenario := filepath.Join(t.TempDir(), "lb.yaml")
	if err := os.WriteFile(lbScenario, []byte("apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: lb}\n"+
		"cluster: {existing: {kubeconfig: /nonexistent, url: \"https://shop.example.com\"}}\nvariants: [{variant: no-prestop}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Results written outside the working directory.
	outside := filepath.Join(t.TempDir(), "outside.yaml")
	if err := os.WriteFile(outside, []byte("apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: outside}\noutput: /etc/cron.d\nvariants: [{variant: no-prestop}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A node image other than droprun's or kind's.
	evilNode := filepath.Join(t.TempDir(), "node.yaml")
	if err := os.WriteFile(evilNode, []byte("apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: node}\n"+
		"cluster: {kind: {nodeImage: \"127.0.0.1:5000/other/node:v1.37.2\"}}\nvariants: [{variant: no-prestop}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const scenarioFile = "../../scenarios/control.yaml"
	// A custom app whose image archive is missing, and Deployments for
	// init: one with two containers, and a Service.
	custom := t.TempDir()
	for n, body := range map[string]string{
		"two.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: two}\nspec:\n  selector: {matchLabels: {app: two}}\n  template:\n    metadata: {labels: {app: two}}\n    spec: {containers: [{name: a, image: a:1}, {name: b, image: b:1}]}\n",
		"svc.yaml": "apiVersion: v1\nkind: Service\nmetadata: {name: svc}\n",
		"s.yaml":   "apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: custom}\napp: {custom: {images: [a:1, a:2], imageArchives: [gone.tar], container: a}}\nvariants: [{name: mine, manifest: two.yaml}]\n",
		// A Deployment that would be root on the host: a scenario alone
		// may not apply it.
		"root.yaml":   "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: root}\nspec:\n  selector: {matchLabels: {app: root}}\n  template:\n    metadata: {labels: {app: root}}\n    spec:\n      hostPID: true\n      containers: [{name: a, image: a:1, securityContext: {privileged: true}}]\n      volumes: [{name: host, hostPath: {path: /}}]\n",
		"root-s.yaml": "apiVersion: droprun/v1alpha1\nkind: Scenario\nmetadata: {name: root}\napp: {custom: {images: [a:1, a:2], imageArchives: [gone.tar], container: a}}\nvariants: [{name: mine, manifest: root.yaml}]\n",
	} {
		if err := os.WriteFile(filepath.Join(custom, n), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	noArchive := filepath.Join(custom, "s.yaml")
	rootApp := filepath.Join(custom, "root-s.yaml")
	shells := []string{"bash", "fish", "powershell", "zsh"}

	cases := map[string]commandCases{
		"": {
			tooMany: []string{"nope"},
			more: []exitCase{
				{name: "no command prints the help", args: []string{}, code: 0, out: "Usage:"},
				{name: "version", args: []string{"--version"}, code: 0, out: "droprun version"},
				{name: "misspelt command", args: []string{"chek"}, code: 2, hint: "droprun", err: "did you mean check?"},
			},
		},
		"help": {
			tooMany: []string{"help", "check", "extra"},
			more: []exitCase{
				{name: "help", args: []string{"help"}, code: 0, out: "Usage:"},
				{name: "help on a command", args: []string{"help", "check"}, code: 0, out: "--max-drops-per-rollout"},
				{name: "help on a subcommand", args: []string{"help", "cluster", "up"}, code: 0, out: "--kube-proxy-mode"},
				{name: "unknown topic", args: []string{"help", "nope"}, code: 2, hint: "droprun help", err: `unknown help topic "nope"`},
			},
		},
		"completion": {
			tooFew:  []string{"completion"},
			tooMany: []string{"completion", "tcsh"},
		},
		"variants": {
			tooMany: []string{"variants", "x"},
			more:    []exitCase{{name: "lists", args: []string{"variants"}, code: 0, out: "no-prestop"}},
		},
		"scenarios": {
			tooMany: []string{"scenarios", "demo", "x"},
			more: []exitCase{
				{name: "lists", args: []string{"scenarios"}, code: 0, out: "compare-all"},
				{name: "prints one", args: []string{"scenarios", "demo"}, code: 0, out: "kind: Scenario"},
				{name: "prints one by file name", args: []string{"scenarios", "demo.yaml"}, code: 0, out: "kind: Scenario"},
				{name: "prints the format", args: []string{"scenarios", "README"}, code: 0, out: "# Scenario files"},
				{name: "--export without a name", args: []string{"scenarios", "--export", "x"}, code: 2, hint: "droprun scenarios", err: "--export needs the NAME of a shipped scenario"},
				{name: "unknown name", args: []string{"scenarios", "nope"}, code: 2, hint: "droprun scenarios", err: `"nope" is not a shipped scenario`},
			},
		},
		"validate": {
			tooFew: []string{"validate"},
			more: []exitCase{
				{name: "valid", args: []string{"validate", scenarioFile}, code: 0, out: "ok  "},
				// validate's documented contract: a file that cannot be
				// read is an invalid file (1), like one with errors.
				{name: "missing file", args: []string{"validate", missing}, code: 1, err: "no such file"},
				{name: "invalid file", args: []string{"validate", badScenario}, code: 1, err: "nope"},
				{name: "output outside the working directory", args: []string{"validate", outside}, code: 1, err: `output: "/etc/cron.d" is not a folder`},
				{name: "archive missing", args: []string{"validate", noArchive}, code: 1, err: "app.custom.imageArchives[0]: " + filepath.Join(custom, "gone.tar") + ": does not exist"},
			},
		},
		"init": {
			tooFew:  []string{"init"},
			tooMany: []string{"init", "a.yaml", "b.yaml"},
			more: []exitCase{
				{name: "several containers", args: []string{"init", "-o", filepath.Join(custom, "x.yaml"), "--image", "a:1", "--image", "a:2", filepath.Join(custom, "two.yaml")}, code: 2, hint: "droprun init", err: "has 2 containers (a, b)"},
				{name: "not a Deployment", args: []string{"init", "-o", filepath.Join(custom, "x.yaml"), "--image", "a:1", "--image", "a:2", filepath.Join(custom, "svc.yaml")}, code: 2, hint: "droprun init", err: "not an apps/v1 Deployment"},
				{name: "one image", args: []string{"init", "-o", filepath.Join(custom, "x.yaml"), "--container", "a", "--port", "80", "--image", "a:1", filepath.Join(custom, "two.yaml")}, code: 2, hint: "droprun init", err: "needs two images"},
				{name: "written", args: []string{"init", "-o", filepath.Join(custom, "ok.yaml"), "--container", "b", "--port", "8080", "--image", "b:1", "--image", "b:2", filepath.Join(custom, "two.yaml")}, code: 0, out: "next: droprun run " + filepath.Join(custom, "ok.yaml")},
			},
		},
		"render": {
			tooMany: []string{"render", "--variant", "no-prestop", scenarioFile, scenarioFile},
			more: []exitCase{
				{name: "builtin", args: []string{"render", "--variant", "no-prestop"}, code: 0, out: "kind: Deployment"},
				{name: "scenario", args: []string{"render", scenarioFile}, code: 0, out: "kind: Deployment"},
				{name: "no variant", args: []string{"render"}, code: 2, hint: "droprun render"},
				{name: "unknown variant", args: []string{"render", "--variant", "nope"}, code: 2, hint: "droprun render", err: `"nope" is not a variant`},
				{name: "bad app version", args: []string{"render", "--variant", "no-prestop", "--app-version", "v9"}, code: 2, hint: "droprun render"},
				{name: "bad bool", args: []string{"render", "--variant", "no-prestop", "--initial=maybe"}, code: 2, hint: "droprun render"},
			},
		},
		"report": {
			tooFew:  []string{"report"},
			tooMany: []string{"report", run, run},
			more: []exitCase{
				{name: "synthetic run", args: []string{"report", "--no-files", run}, code: 0, out: "alpha"},
				{name: "json", args: []string{"report", "--no-files", "--format", "json", run}, code: 0, out: `"variant"`},
				{name: "not a run", args: []string{"report", "--no-files", notRun}, code: 2, err: "not a droprun run directory"},
				{name: "missing dir", args: []string{"report", "--no-files", missing}, code: 2},
				{name: "bad format", args: []string{"report", "--no-files", "--format", "yaml", run}, code: 2, hint: "droprun report"},
			},
		},
		"pack": {
			tooFew: []string{"pack"},
			more: []exitCase{
				{name: "packs", args: []string{"pack", packRun}, code: 0, out: "packed"},
				{name: "not a run", args: []string{"pack", notRun}, code: 2, hint: "droprun pack", err: "not a run directory"},
				{name: "missing dir", args: []string{"pack", missing}, code: 2, hint: "droprun pack", err: "not a run directory"},
			},
		},
		"advise": {
			tooFew: []string{"advise"},
			more: []exitCase{
				{name: "missing run", args: []string{"advise", missing}, code: 2, err: "run directory"},
				{name: "not a run", args: []string{"advise", notRun}, code: 2, err: "is not a droprun run directory"},
				{name: "bad quantile", args: []string{"advise", "--quantile", "1", run}, code: 2, hint: "droprun advise"},
				{name: "no route data", args: []string{"advise", run}, code: 3, out: "undecided: no (pod, node) route data"},
			},
		},
		"check": {
			tooFew:  []string{"check", "--max-drops-per-rollout", "0"},
			tooMany: []string{"check", "--max-drops-per-rollout", "0", run, run},
			more: []exitCase{
				// check's output is report.go's (being reworked): only
				// the exit codes are held here.
				{name: "meets its limits", args: []string{"check", "--max-drops-per-rollout", "100", "--rollout-tolerance", "0.96", run}, code: 0},
				{name: "one variant meets its limits", args: []string{"check", "--variant", "beta", "--max-drops-per-rollout", "0", "--rollout-tolerance", "0.96", run}, code: 0},
				{name: "breaks a limit", args: []string{"check", "--max-drops-per-rollout", "0", "--rollout-tolerance", "0.1", run}, code: 1},
				{name: "undecided", args: []string{"check", "--max-drops-per-rollout", "0", run}, code: 3},
				{name: "breaks a rate limit", args: []string{"check", "--max-drop-rate", "0", run}, code: 1},
				{name: "no limit", args: []string{"check", run}, code: 2},
				{name: "bad limit", args: []string{"check", "--max-drop-rate", "lots", run}, code: 2, hint: "droprun check", err: "max-drop-rate"},
				{name: "not a run", args: []string{"check", "--max-drops-per-rollout", "0", notRun}, code: 2, err: "not a droprun run directory"},
				{name: "missing dir", args: []string{"check", "--max-drops-per-rollout", "0", missing}, code: 2},
				{name: "baseline not a run", args: []string{"check", "--baseline", notRun, run}, code: 2},
				{name: "no history yet", args: []string{"check", "--history", notRun, run}, code: 3, out: "no earlier run in the history has this row's key"},
				{name: "history missing", args: []string{"check", "--history", missing, run}, code: 2, err: "no such path"},
				{name: "history flag without --history", args: []string{"check", "--min-allowance", "2", "--max-drops-per-rollout", "0", run}, code: 2, hint: "droprun check", err: "--min-allowance needs --history DIR"},
				{name: "bad allowance", args: []string{"check", "--history", notRun, "--min-allowance", "-1", run}, code: 2, err: "--min-allowance -1"},
			},
		},
		"history": {
			tooFew: []string{"history"},
			more: []exitCase{
				{name: "shipped runs", args: []string{"history", "../../results/examples"}, code: 0, out: "compare-all · no-prestop"},
				{name: "no runs", args: []string{"history", notRun}, code: 1, err: "no runs under"},
				{name: "missing path", args: []string{"history", missing}, code: 2, hint: "droprun history", err: "no such path"},
				{name: "bad format", args: []string{"history", "--format", "yaml", notRun}, code: 2, hint: "droprun history", err: `--format "yaml"`},
				{name: "bad confidence", args: []string{"history", "--confidence", "1", notRun}, code: 2, hint: "droprun history"},
			},
		},
		"compare": {
			tooFew:  []string{"compare", run},
			tooMany: []string{"compare", run, run, run},
			more: []exitCase{
				{name: "same run", args: []string{"compare", run, run}, code: 0, out: "alpha"},
				{name: "not a run", args: []string{"compare", run, notRun}, code: 2, err: "not a droprun run directory"},
				{name: "missing dir", args: []string{"compare", missing, run}, code: 2},
			},
		},
		// Docker or a cluster: only rows that fail before using them.
		"run": {
			tooFew:  []string{"run"},
			tooMany: []string{"run", scenarioFile, scenarioFile},
			more: []exitCase{
				{name: "bad flag value", args: []string{"run", "--cluster-cpu-shares", "many", scenarioFile}, code: 2, hint: "droprun run"},
				// Bad input, found before a run directory or a cluster exists.
				{name: "invalid scenario", args: []string{"run", badScenario}, code: 2, err: "nope"},
				{name: "archive missing", args: []string{"run", "--output-dir", filepath.Join(custom, "run"), noArchive}, code: 2, err: "gone.tar: does not exist"},
				{name: "neither a file nor a shipped scenario", args: []string{"run", missing}, code: 2, hint: "droprun run", err: "no shipped scenario of that name (shipped: caddy, compare-all,"},
				{name: "a load balancer URL nobody named", args: []string{"run", lbScenario}, code: 2, hint: "droprun run", err: "name it: --allow-target shop.example.com:443"},
				// --kubeconfig picks the cluster but keeps the scenario's url.
				{name: "--kubeconfig keeps cluster.existing.url", args: []string{"run", "--kubeconfig", missing, lbScenario}, code: 2, hint: "droprun run", err: "name it: --allow-target shop.example.com:443"},
				{name: "--allow-target naming another host", args: []string{"run", "--allow-target", "shop.example.org", lbScenario}, code: 2, hint: "droprun run", err: "--allow-target shop.example.org does not name cluster.existing.url"},
				{name: "--allow-target with a scheme", args: []string{"run", "--allow-target", "https://shop.example.com", lbScenario}, code: 2, hint: "droprun run", err: "is not a host (no scheme, path or user)"},
				{name: "--allow-target on kind", args: []string{"run", "--allow-target", "shop.example.com", scenarioFile}, code: 2, hint: "droprun run", err: "applies to an existing cluster's url only"},
				// A node image runs privileged: a scenario alone cannot pick one.
				{name: "a node image nobody allowed", args: []string{"run", evilNode}, code: 2, hint: "droprun run", err: "pass --allow-node-image 127.0.0.1:5000/other/node:v1.37.2"},
				{name: "--allow-node-image naming another image", args: []string{"run", "--allow-node-image", "127.0.0.1:5000/other/node:v2", evilNode}, code: 2, hint: "droprun run", err: "does not name the scenario's node image"},
				// Nor can it run a pod beyond the Pod Security baseline.
				{name: "a privileged custom app nobody allowed", args: []string{"run", rootApp}, code: 2, hint: "droprun run", err: `root.yaml (variant mine): hostPID, hostPath volume "host" (/), container "a": privileged; remove those fields, or, if you trust the manifest, pass --allow-privileged`},
				{name: "--allow-privileged lets it pass to the next check", args: []string{"run", "--allow-privileged", "--output-dir", filepath.Join(custom, "run2"), rootApp}, code: 2, err: "gone.tar: does not exist"},
				{name: "--allow-privileged on bookshop", args: []string{"run", "--allow-privileged", scenarioFile}, code: 2, hint: "droprun run", err: "--allow-privileged applies to a custom app's manifests"},
				// Nor choose where on this machine a run writes.
				{name: "output outside the working directory", args: []string{"run", outside}, code: 2, err: `output: "/etc/cron.d" is not a folder under the directory droprun runs in`},
			},
		},
		"deploy": {
			tooMany: []string{"deploy", "--variant", "no-prestop", scenarioFile, scenarioFile},
			more: []exitCase{
				{name: "no variant", args: []string{"deploy"}, code: 2, hint: "droprun deploy", err: "--variant is required"},
				{name: "unknown variant", args: []string{"deploy", "--variant", "nope"}, code: 2, hint: "droprun deploy"},
				{name: "bad app version", args: []string{"deploy", "--variant", "no-prestop", "--app-version", "v9"}, code: 2, hint: "droprun deploy"},
				{name: "a privileged custom app nobody allowed", args: []string{"deploy", "--variant", "mine", rootApp}, code: 2, err: "pass --allow-privileged"},
			},
		},
		"cluster": {
			tooFew:  []string{"cluster"},
			tooMany: []string{"cluster", "nope"},
			more: []exitCase{
				{name: "misspelt subcommand", args: []string{"cluster", "stat"}, code: 2, hint: "droprun cluster", err: "did you mean status?"},
			},
		},
		"cluster up": {
			tooMany: []string{"cluster", "up", "x"},
			more: []exitCase{
				{name: "bad flag value", args: []string{"cluster", "up", "--nodes", "three"}, code: 2, hint: "droprun cluster up"},
				{name: "a node image from a file", args: []string{"cluster", "up", "-f", evilNode}, code: 2, hint: "droprun cluster up", err: "pass --node-image 127.0.0.1:5000/other/node:v1.37.2"},
			},
		},
		"cluster down": {
			tooMany: []string{"cluster", "down", "x"},
			more: []exitCase{
				// A name that is a path never reaches kind or the file system.
				{name: "a cluster name that is a path", args: []string{"cluster", "down", "--name", "x/../../../elsewhere/a"}, code: 2, hint: "droprun cluster down", err: "is not a kind cluster name"},
			},
		},
		"cluster status": {tooMany: []string{"cluster", "status", "x"}},
		"image":          {tooFew: []string{"image"}, tooMany: []string{"image", "nope"}},
		"image build": {
			tooMany: []string{"image", "build", "x"},
			more: []exitCase{
				{name: "bad flag value", args: []string{"image", "build", "--versions"}, code: 2, hint: "droprun image build"},
			},
		},
		"image build-go": {
			tooFew:  []string{"image", "build-go"},
			tooMany: []string{"image", "build-go", "a@v1", "b@v1"},
			more: []exitCase{
				{name: "no version", args: []string{"image", "build-go", "example.com/app", "--tag", "app:a", "--out", "x.tar"}, code: 2, hint: "droprun image build-go", err: "has no @VERSION"},
				{name: "no tag", args: []string{"image", "build-go", "example.com/app@v1", "--out", "x.tar"}, code: 2, hint: "droprun image build-go", err: "--tag NAME:TAG"},
				{name: "no out", args: []string{"image", "build-go", "example.com/app@v1", "--tag", "app:a"}, code: 2, hint: "droprun image build-go", err: "--out FILE.tar"},
				{name: "latest", args: []string{"image", "build-go", "example.com/app@v1", "--tag", "app:latest", "--out", "x.tar"}, code: 1, err: "pulls :latest"},
			},
		},
		"image fronts": {tooMany: []string{"image", "fronts", "x"}},
		"image generator": {
			tooMany: []string{"image", "generator", "x"},
			more: []exitCase{
				{name: "bad platform", args: []string{"image", "generator", "--platform", "windows/amd64"}, code: 2, hint: "droprun image generator", err: "linux/amd64 or linux/arm64"},
			},
		},
		"engine":          {tooFew: []string{"engine"}, tooMany: []string{"engine", "nope"}},
		"engine setup":    {tooMany: []string{"engine", "setup", "x"}},
		"engine teardown": {tooMany: []string{"engine", "teardown", "x"}},
		"doctor": {
			tooMany: []string{"doctor", "x"},
			more: []exitCase{
				{name: "bad flag value", args: []string{"doctor", "--host-port", "high"}, code: 2, hint: "droprun doctor"},
			},
		},
		"node-image": {tooFew: []string{"node-image"}, tooMany: []string{"node-image", "nope"}},
		"node-image build": {
			tooMany: []string{"node-image", "build", "x"},
			more: []exitCase{
				{name: "bad flag value", args: []string{"node-image", "build", "--force=maybe"}, code: 2, hint: "droprun node-image build"},
			},
		},
	}
	for _, sh := range shells {
		cases["completion "+sh] = commandCases{
			tooMany: []string{"completion", sh, "x"},
			more:    []exitCase{{name: "script", args: []string{"completion", sh}, code: 0, out: "droprun"}},
		}
	}
	return cases
}

// commandPaths walks the command tree newRootCmd builds: every command,
// by its path without "droprun".
func commandPaths() []string {
	var paths []string
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		paths = append(paths, strings.TrimPrefix(strings.TrimPrefix(c.CommandPath(), "droprun"), " "))
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(streams{In: strings.NewReader(""), Out: &strings.Builder{}, Err: &strings.Builder{}}))
	sort.Strings(paths)
	return paths
}

// TestExitCodes runs every command of the tree through the CLI: wrong
// argument counts, an unknown flag, --help, and each command's own cases.
// A command added without rows fails it.
func TestExitCodes(t *testing.T) {
	cases := exitCases(t)
	paths := commandPaths()
	for _, p := range paths {
		if _, ok := cases[p]; !ok {
			t.Errorf("command %q has no exit-code rows: add it to exitCases", "droprun "+p)
		}
	}
	for p := range cases {
		if !slices.Contains(paths, p) {
			t.Errorf("exitCases has rows for %q, which is not a command", p)
		}
	}
	for _, p := range paths {
		cc, ok := cases[p]
		if !ok {
			continue
		}
		full := strings.TrimSpace("droprun " + p)
		words := strings.Fields(p)
		rows := []exitCase{
			{name: "help", args: append(slices.Clone(words), "--help"), code: 0, out: "Usage:"},
			{name: "unknown flag", args: append(slices.Clone(words), "--no-such-flag"), code: 2, hint: full, err: "unknown flag: --no-such-flag"},
		}
		if cc.tooFew != nil {
			rows = append(rows, exitCase{name: "too few args", args: cc.tooFew, code: 2, hint: full})
		}
		if cc.tooMany != nil {
			rows = append(rows, exitCase{name: "too many args", args: cc.tooMany, code: 2, hint: full})
		}
		rows = append(rows, cc.more...)
		t.Run(strings.ReplaceAll(full, " ", "_"), func(t *testing.T) {
			for _, tc := range rows {
				t.Run(tc.name, func(t *testing.T) {
					out, errs, code := runCLI(t, tc.args...)
					t.Logf("droprun %s: exit %d, stderr:\n%s", strings.Join(tc.args, " "), code, errs)
					if code != tc.code {
						t.Errorf("droprun %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(tc.args, " "), code, tc.code, out, errs)
					}
					if tc.hint != "" {
						if want := "run '" + tc.hint + " --help' for usage"; !strings.Contains(errs, want) {
							t.Errorf("droprun %s: stderr %q lacks the hint %q", strings.Join(tc.args, " "), errs, want)
						}
					}
					if tc.code == 0 && errs != "" && tc.name == "help" {
						t.Errorf("droprun %s: --help wrote to stderr: %q", strings.Join(tc.args, " "), errs)
					}
					if !strings.Contains(out, tc.out) {
						t.Errorf("droprun %s: stdout %q lacks %q", strings.Join(tc.args, " "), out, tc.out)
					}
					if !strings.Contains(errs, tc.err) {
						t.Errorf("droprun %s: stderr %q lacks %q", strings.Join(tc.args, " "), errs, tc.err)
					}
				})
			}
		})
	}
}

// TestUsageErrorMessage: an argument error names the command, shows its
// usage line and where its help is.
func TestUsageErrorMessage(t *testing.T) {
	_, errs, code := runCLI(t, "check")
	want := "droprun: check: accepts 1 arg(s), received 0\nusage: droprun check RUN_DIR [flags]\nrun 'droprun check --help' for usage\n"
	if code != 2 || errs != want {
		t.Errorf("exit %d, stderr:\n%s\nwant:\n%s", code, errs, want)
	}
	_, errs, _ = runCLI(t, "doctor", "now")
	if !strings.Contains(errs, `doctor takes no arguments, got ["now"]`) {
		t.Errorf("doctor now: %q", errs)
	}
	// Bad input that is not bad usage gets no hint.
	_, errs, code = runCLI(t, "report", "--no-files", t.TempDir())
	if code != 2 || strings.Contains(errs, "--help") {
		t.Errorf("report on a non-run: exit %d, stderr %q", code, errs)
	}
}
