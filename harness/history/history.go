package history

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/runfile"
	"github.com/droprun/droprun/harness/stats"
)

// Key is what two runs' rows must share to be one series.
type Key struct {
	Scenario string `json:"scenario"`
	Variant  string `json:"variant"` // the row: a variant, or NAME/introducing
	// Path is where the load entered: traffic.target (nodeport, clusterip,
	// gateway, traefik, caddy), with "from N pods" when generator pods
	// sent it.
	Path string `json:"path"`
	// Protocol is traffic.protocol and connection mode, e.g. http1-new,
	// h2c ×4 (connections per target).
	Protocol string `json:"protocol"`
	// Load is the request rate and the client's timeout, e.g.
	// "500 req/s, timeout 2s": a drop rate depends on both.
	Load       string `json:"load,omitempty"`
	KubeProxy  string `json:"kubeProxy"`
	Kubernetes string `json:"kubernetes"`
	// Nodes is the cluster's node count (0 where the run did not say).
	Nodes int `json:"nodes,omitempty"`
	// Replicas is the row's Deployment's replicas as its rollouts found
	// them (0 where the run did not say): a drop rate depends on how many
	// pods share the load.
	Replicas int `json:"replicas,omitempty"`
	// App is the image repositories of the pods the row's rollouts
	// deleted, tags and digests cut (e.g. "bookshop"); "" for runs
	// recorded before droprun read them.
	App string `json:"app"`
}

// String is the key in one line, its parts joined by " · ".
func (k Key) String() string {
	nodes := "nodes ?"
	if k.Nodes > 0 {
		nodes = fmt.Sprintf("%d nodes", k.Nodes)
	}
	parts := []string{k.Scenario, k.Variant, k.Path, k.Protocol, or(k.Load, "load ?"), or(k.KubeProxy, "kube-proxy ?"), or(k.Kubernetes, "Kubernetes ?"), nodes}
	if k.Replicas > 0 { // runs before droprun recorded it say nothing
		parts = append(parts, fmt.Sprintf("%d replicas", k.Replicas))
	}
	return strings.Join(append(parts, or(k.App, "app ?")), " · ")
}

// Point is one row of one run.
type Point struct {
	Dir     string    `json:"dir"`
	Started time.Time `json:"started"`
	// Droprun is the droprun version that ran it; Images the images of
	// the pods its rollouts deleted, as named, each with its digest
	// (shortened) where the runtime reported one.
	Droprun string   `json:"droprun"`
	Images  []string `json:"images,omitempty"`
	// Rollouts are its rollouts' drops (as the gate counts them: seen and
	// masked) and window requests.
	Rollouts []stats.Rollout `json:"rollouts"`
	// Rate is the drop rate over rollouts with its interval
	// (stats.RateOverRollouts, at stats.DefaultConfidence).
	Rate stats.RolloutRate `json:"-"`
	// Suspect says why the measurement should not be trusted (the run's
	// and the row's notes); such a point is shown but trains no
	// threshold.
	Suspect []string `json:"suspect,omitempty"`
	// Doubt says why the rig, not the variant, may have dropped some of
	// the row's requests (answers the pods gave that the client never
	// received, a rollout the rig was short of CPU for); "" when nothing
	// puts the drops in doubt. A gate leaves such a run undecided.
	Doubt string `json:"doubt,omitempty"`
}

// Drops and Requests are the point's totals over its rollouts.
func (p Point) Drops() uint64    { d, _ := p.totals(); return d }
func (p Point) Requests() uint64 { _, n := p.totals(); return n }

func (p Point) totals() (drops, requests uint64) {
	for _, r := range p.Rollouts {
		drops, requests = drops+r.Drops, requests+r.Requests
	}
	return drops, requests
}

// PerRollout is the mean drops per rollout.
func (p Point) PerRollout() float64 {
	if len(p.Rollouts) == 0 {
		return 0
	}
	return float64(p.Drops()) / float64(len(p.Rollouts))
}

// Image is the point's images in one string.
func (p Point) Image() string { return or(strings.Join(p.Images, " "), "?") }

// Series is one key's points in time order.
type Series struct {
	Key    Key     `json:"key"`
	Points []Point `json:"points"`
}

// Skip is a directory the history did not read, and why.
type Skip struct {
	Dir string `json:"dir"`
	Why string `json:"why"`
}

// History is every series read.
type History struct {
	Series  []Series `json:"series"`
	Runs    int      `json:"runs"`
	Skipped []Skip   `json:"skipped,omitempty"`
}

// Options bound a Read.
type Options struct {
	// MaxRuns is the most run directories read (default DefaultMaxRuns):
	// more is an error, not a silent cut.
	MaxRuns int
	// MaxDepth is how deep below each path runs are looked for (default
	// DefaultMaxDepth).
	MaxDepth int
}

const (
	DefaultMaxRuns  = 10000
	DefaultMaxDepth = 6
	// maxSummary bounds one summary.json read: a summary is kilobytes to
	// a few megabytes; a bigger file is not one.
	maxSummary = 64 << 20
)

// ErrNoPath is returned, wrapped, for a path that does not exist.
var ErrNoPath = errors.New("no such path")

// Read reads every run directory (one holding summary.json) under paths,
// at most o.MaxDepth below each, and returns their rows as series. A run
// that did not finish or cannot be read is skipped with its reason; a
// path that does not exist, or more runs than o.MaxRuns, is an error.
func Read(paths []string, o Options) (*History, error) {
	if o.MaxRuns <= 0 {
		o.MaxRuns = DefaultMaxRuns
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	h := &History{}
	byKey := map[Key]*Series{}
	seen := map[string]bool{}
	runs := map[string]string{} // a run's identity → the first directory holding it
	for _, root := range paths {
		if _, err := os.Stat(root); err != nil {
			return nil, fmt.Errorf("%s: %w (give run directories, or directories holding them)", root, ErrNoPath)
		}
		// WalkDir does not follow a root that is a link.
		if real, err := filepath.EvalSymlinks(root); err == nil && real != filepath.Clean(root) {
			if fi, err := os.Lstat(root); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				root = real
			}
		}
		err := filepath.WalkDir(root, func(dir string, d fs.DirEntry, err error) error {
			if err != nil {
				h.Skipped = append(h.Skipped, Skip{Dir: dir, Why: err.Error()})
				return skipDir(d)
			}
			if !d.IsDir() {
				return nil
			}
			if depth(root, dir) > o.MaxDepth {
				return fs.SkipDir
			}
			if _, err := os.Stat(filepath.Join(dir, runfile.SummaryFile)); err != nil {
				if _, rerr := os.Stat(filepath.Join(dir, runfile.RunFile)); rerr == nil {
					h.Skipped = append(h.Skipped, Skip{Dir: dir, Why: "a run without summary.json (killed before its analysis): `droprun report " + dir + "` writes it"})
					return fs.SkipDir
				}
				return nil
			}
			abs, _ := filepath.Abs(dir)
			if seen[abs] {
				return fs.SkipDir
			}
			seen[abs] = true
			if h.Runs+len(h.Skipped) >= o.MaxRuns {
				return fmt.Errorf("more than %d run directories under %s: name fewer paths (droprun history takes --max-runs to read more)", o.MaxRuns, root)
			}
			sum, why := readSummary(dir)
			if why != "" {
				h.Skipped = append(h.Skipped, Skip{Dir: dir, Why: why})
				return fs.SkipDir
			}
			// A copied run directory is the same run again: counted twice
			// it would look like evidence it is not.
			id := sum.Scenario + "\x00" + sum.Started.UTC().Format(time.RFC3339Nano) + "\x00" + sum.Finished.UTC().Format(time.RFC3339Nano)
			if first, ok := runs[id]; ok {
				h.Skipped = append(h.Skipped, Skip{Dir: dir, Why: fmt.Sprintf("the same run as %s (scenario %s, started %s): a copy is counted once", first, sum.Scenario, sum.Started.UTC().Format(time.RFC3339))})
				return fs.SkipDir
			}
			runs[id] = dir
			h.Runs++
			for _, p := range points(dir, sum) {
				s := byKey[p.key]
				if s == nil {
					s = &Series{Key: p.key}
					byKey[p.key] = s
				}
				s.Points = append(s.Points, p.Point)
			}
			return fs.SkipDir // a run holds no runs
		})
		if err != nil {
			return nil, err
		}
	}
	for _, s := range byKey {
		slices.SortStableFunc(s.Points, func(a, b Point) int {
			return cmp.Or(a.Started.Compare(b.Started), cmp.Compare(a.Dir, b.Dir))
		})
		h.Series = append(h.Series, *s)
	}
	slices.SortFunc(h.Series, func(a, b Series) int { return cmp.Compare(a.Key.String(), b.Key.String()) })
	return h, nil
}

func skipDir(d fs.DirEntry) error {
	if d != nil && d.IsDir() {
		return fs.SkipDir
	}
	return nil
}

// depth is how many directories dir is below root.
func depth(root, dir string) int {
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == "." {
		return 0
	}
	return strings.Count(rel, string(filepath.Separator)) + 1
}

// readSummary reads dir's summary.json, or says why it is not a run the
// history can use.
func readSummary(dir string) (*analysis.Summary, string) {
	fi, err := os.Stat(filepath.Join(dir, runfile.SummaryFile))
	if err != nil {
		return nil, err.Error()
	}
	if fi.Size() > maxSummary {
		return nil, fmt.Sprintf("summary.json is %d MiB, more than any run writes (%d MiB at most read)", fi.Size()>>20, maxSummary>>20)
	}
	sum, err := analysis.ReadSummary(dir)
	if err != nil {
		return nil, "unreadable summary.json: " + err.Error()
	}
	if sum.Format != analysis.SummaryVersion {
		return nil, fmt.Sprintf("summary.json format %q, this droprun reads %q: `droprun report %s` rewrites it from the raw data", sum.Format, analysis.SummaryVersion, dir)
	}
	if u := sum.Unfinished("the run"); u != "" {
		return nil, u + ": its rollouts are not a whole run's"
	}
	if sum.Started.IsZero() {
		return nil, "summary.json has no start time: a run cannot be placed in time without one"
	}
	return sum, ""
}

type keyed struct {
	Point
	key Key
}

// points are a run's rows as points, each with its key.
func points(dir string, sum *analysis.Summary) []keyed {
	var out []keyed
	for _, v := range sum.Variants {
		if len(v.Rollouts) == 0 {
			continue
		}
		p := Point{Dir: dir, Started: sum.Started, Droprun: sum.Cluster.DroprunVer, Rollouts: v.Counted(), Images: images(v)}
		p.Rate = stats.RateOverRollouts(p.Rollouts, stats.DefaultConfidence, stats.Dispersion{})
		p.Suspect = sum.SuspectOf(v)
		p.Doubt = doubtOf(v)
		out = append(out, keyed{Point: p, key: KeyOf(sum, v)})
	}
	return out
}

// KeyOf is the key of row v of a run.
func KeyOf(sum *analysis.Summary, v analysis.VariantSummary) Key {
	t := sum.Traffic
	path := or(t.Target, "nodeport")
	if t.Generators > 0 {
		path += fmt.Sprintf(" from %d pods", t.Generators)
	}
	proto := string(t.ProtocolOf())
	if t.Connections > 0 {
		proto += fmt.Sprintf(" ×%d", t.Connections)
	}
	load := fmt.Sprintf("%d req/s, timeout %s", t.Rate, or(t.Timeout, "?"))
	return Key{Scenario: sum.Scenario, Variant: v.Variant, Path: path, Protocol: proto, Load: load,
		KubeProxy: sum.Cluster.KubeProxyMode, Kubernetes: sum.Cluster.Kubernetes, Nodes: sum.Cluster.Nodes, Replicas: replicas(v), App: strings.Join(repositories(v), " ")}
}

// replicas is the most replicas v's rollouts found its Deployment with
// (0 when no rollout said).
func replicas(v analysis.VariantSummary) int {
	n := 0
	for _, ro := range v.Rollouts {
		if f := ro.LivePods; f != nil {
			n = max(n, int(f.Replicas))
		}
	}
	return n
}

// repositories are the image repositories of the pods v's rollouts
// deleted, sorted, tags and digests cut.
func repositories(v analysis.VariantSummary) []string {
	var out []string
	for _, ro := range v.Rollouts {
		if f := ro.LivePods; f != nil && f.Image != "" {
			repo, _, _ := strings.Cut(f.Image, "@")
			if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
				repo = repo[:i] // a tag, not a registry's port
			}
			if !slices.Contains(out, repo) {
				out = append(out, repo)
			}
		}
	}
	slices.Sort(out)
	return out
}

// images are the images of the pods v's rollouts deleted, as named, with
// the digest's first 12 hex digits where the runtime reported one.
func images(v analysis.VariantSummary) []string {
	var out []string
	for _, ro := range v.Rollouts {
		f := ro.LivePods
		if f == nil || f.Image == "" {
			continue
		}
		im := f.Image
		if _, d, ok := strings.Cut(f.ImageID, "sha256:"); ok && len(d) >= 12 {
			im += "@" + d[:12]
		}
		if !slices.Contains(out, im) {
			out = append(out, im)
		}
	}
	slices.Sort(out)
	return out
}

func or(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// doubtOf says why the rig may have dropped some of row v's requests, or
// "": the pods answered 2xx the client never received, or a rollout was
// short of CPU (a rig sample saw a stall, or timeouts were excused).
func doubtOf(v analysis.VariantSummary) string {
	var why []string
	if v.Unreceived > 0 {
		why = append(why, fmt.Sprintf("the pods answered %d 2xx the client never received", v.Unreceived))
	}
	for _, ro := range v.Rollouts {
		if ro.Excused > 0 || ro.Rig != nil && ro.Rig.Saturated {
			why = append(why, fmt.Sprintf("rollout %d was short of CPU", ro.N))
		}
	}
	return strings.Join(why, "; ")
}
