package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	junit "github.com/joshdk/go-junit"
	"sigs.k8s.io/yaml"
)

// exampleRun is the real run shipped with the repository.
const exampleRun = "../../results/examples/example-run"

// The droprun commands of examples/ci/droprun.yml run as written: offline
// ones (validate, report, check) against the shipped example run; `run`
// and `node-image build` only as far as their flags (they need docker and
// a cluster, which the end-to-end tests cover).
func TestCIExampleCommands(t *testing.T) {
	b, err := os.ReadFile("../../examples/ci/droprun.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Env   map[string]string `json:"env"`
			Steps []struct {
				Name string `json:"name"`
				Run  string `json:"run"`
			} `json:"steps"`
		} `json:"jobs"`
	}
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	run := filepath.Join(tmp, "run")
	if err := os.CopyFS(run, os.DirFS(exampleRun)); err != nil {
		t.Fatalf("copying the example run (report writes into it): %v", err)
	}
	// The workflow's files, here: the run above, droprun's custom-app
	// scenario for the user's, and a JUnit file in tmp.
	// The history job starts from an empty history: its gate is
	// inconclusive (exit 3) only for that, which the step turns into a
	// warning.
	history := filepath.Join(tmp, "history")
	if err := os.MkdirAll(history, 0o755); err != nil {
		t.Fatal(err)
	}
	sub := strings.NewReplacer(`"$SCENARIO"`, "../../scenarios/custom-app.yaml", `"$RUN"`, run, `"$HISTORY"`, history,
		"out/check.xml", filepath.Join(tmp, "check.xml"), "out/history.xml", filepath.Join(tmp, "history.xml"))
	want := map[string]int{
		"validate":        0,
		"report":          0,
		"check":           1, // the example run's no-prestop drops in every rollout
		"check --history": 3,
		"history":         0,
	}
	seen := map[string]bool{}
	for _, job := range wf.Jobs {
		if job.Env["RUN"] != "out/run" {
			t.Errorf("env RUN is %q; the workflow's artefact paths assume out/run", job.Env["RUN"])
		}
		for _, step := range job.Steps {
			for _, line := range strings.Split(step.Run, "\n") {
				line = strings.TrimSpace(line)
				if !strings.HasPrefix(line, "droprun ") {
					continue
				}
				line, _, _ = strings.Cut(line, ">>")  // the step summary redirect
				line, _, _ = strings.Cut(line, " | ") // a tee of its output
				args := strings.Fields(sub.Replace(line))[1:]
				name := args[0]
				seen[name] = true
				if name == "run" || name == "node-image" {
					cmd, rest, err := newRootCmd(streams{}).Find(args)
					if err != nil || !cmd.Runnable() {
						t.Fatalf("%q: %v", line, err)
					}
					if err := cmd.ParseFlags(rest); err != nil {
						t.Errorf("step %q: %q: %v", step.Name, line, err)
					}
					continue
				}
				if name == "check" && strings.Contains(line, "--history") {
					name = "check --history"
				}
				seen[name] = true
				code, ok := want[name]
				if !ok {
					t.Errorf("step %q runs droprun %s, which this test does not know", step.Name, name)
					continue
				}
				out, errOut, got := runCLI(t, args...)
				if got != code {
					t.Errorf("step %q: droprun %s exited %d, want %d\nstdout:\n%s\nstderr:\n%s", step.Name, strings.Join(args, " "), got, code, out, errOut)
				}
			}
		}
	}
	for _, name := range []string{"node-image", "validate", "run", "report", "check", "check --history", "history"} {
		if !seen[name] {
			t.Errorf("the workflow no longer runs droprun %s", name)
		}
	}
	suites, err := junit.IngestFile(filepath.Join(tmp, "check.xml"))
	if err != nil || len(suites) != 1 || suites[0].Totals.Failed == 0 {
		t.Errorf("the gate's JUnit file: %v, %+v", err, suites)
	}
	if _, err := junit.IngestFile(filepath.Join(tmp, "history.xml")); err != nil {
		t.Errorf("the history gate's JUnit file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(run, "report", "report.html")); err != nil {
		t.Errorf("the report step wrote no report.html: %v", err)
	}
}

// The gate on the shipped run: a pass, a failure, an inconclusive limit
// and bad input, each with its exit code and the numbers behind it.
func TestCheckOnExampleRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  string
	}{
		// 0 drops bound a rate only with a stated burstiness; without
		// one, for any shape: 4 clean rollouts show at most 53 % drop.
		{"graceful-drain drops nothing, its bursts stated", []string{"--variant", "graceful-drain", "--max-drop-rate", "0.01", "--burstiness", "0.005"}, 0, "0 failed, 0 inconclusive"},
		{"graceful-drain, no burstiness stated", []string{"--variant", "graceful-drain", "--max-drop-rate", "0.01"}, 3, "0 drops in 5,744 requests over 4 rollouts; at 95% at most 53% of rollouts drop at all, whatever the shape of their bursts"},
		{"4 clean rollouts cannot show 70 % of rollouts clean", []string{"--variant", "graceful-drain", "--max-drops-per-rollout", "0"}, 3, "5 more rollout(s) without a breach would show it met (traffic.rollouts 9 in all)"},
		{"4 clean rollouts show 47 % of rollouts clean", []string{"--variant", "graceful-drain", "--max-drops-per-rollout", "0", "--rollout-tolerance", "0.6"}, 0, "0 failed, 0 inconclusive"},
		{"no-prestop drops in every rollout", []string{"--max-drops-per-rollout", "0"}, 1, "FAIL         no-prestop max-drops-per-rollout: rollout 1 dropped 61; rollout 2 dropped 59; rollout 3 dropped 91; rollout 4 dropped 80: above the limit 0 per rollout; at 95% at least 47% of rollouts break it (exact, 4 of 4 here)"},
		{"too few requests for 1e-4", []string{"--variant", "graceful-drain", "--max-drop-rate", "0.0001", "--burstiness", "0.005"}, 3, "it would take about"},
		{"within the margin of itself", []string{"--variant", "no-prestop", "--baseline", exampleRun}, 0, "0 failed, 0 inconclusive"},
		{"a typo", []string{"--variant", "graceful-dran", "--max-drops-per-rollout", "0"}, 2, ""},
		{"NaN", []string{"--max-drop-rate", "nan"}, 2, ""},
		{"a tolerance of 1", []string{"--max-drops-per-rollout", "0", "--rollout-tolerance", "1"}, 2, ""},
		{"a margin below 1", []string{"--baseline", exampleRun, "--margin", "0.5"}, 2, ""},
		// docs/ci.md's numbers: 0 in 5,744 over 4 rollouts, bounded at
		// 0.0018 for drops as bursty as ρ 0.005.
		{"docs/ci.md: 0.001 is too small to show", []string{"--variant", "graceful-drain", "--max-drop-rate", "0.001", "--burstiness", "0.005"}, 3, "at most 0.0018 over rollouts, for drops as bursty as ρ 0.005 (stated with --burstiness)"},
		{"docs/ci.md: 0.002 is shown", []string{"--variant", "graceful-drain", "--max-drop-rate", "0.002", "--burstiness", "0.005"}, 0, "0 failed, 0 inconclusive"},
		{"a confidence below 0.5", []string{"--variant", "no-prestop", "--max-drop-rate", "0.064", "--confidence", "0.2"}, 2, ""},
		{"a rate limit of 1", []string{"--variant", "no-prestop", "--max-drop-rate", "1"}, 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runCLI(t, append([]string{"check", exampleRun}, tc.args...)...)
			if code != tc.code || !strings.Contains(out, tc.out) {
				t.Errorf("exit %d, want %d; stdout:\n%s\nwant it to contain %q; stderr:\n%s", code, tc.code, out, tc.out, errOut)
			}
		})
	}
}

// The README's commands on the shipped run: the report explains every drop
// beside its chance baselines, and advise bounds the delay from the run's
// (pod, node) pairs.
func TestREADMEOnExampleRun(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	if err := os.CopyFS(run, os.DirFS(exampleRun)); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "report", run, "--no-files")
	if code != 0 || !strings.Contains(out, "no-prestop: 291 of 291 drops explained by a (pod, node) race window (100.0%) against 95.8% by chance") {
		t.Errorf("report: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = runCLI(t, "advise", run)
	if code != 0 || !strings.Contains(out, "48 (pod, node) pairs from 8 rollouts") || !strings.Contains(out, "48 seen in the node's own rules") {
		t.Errorf("advise: exit %d\n%s\n%s", code, out, errOut)
	}
}
