package history

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/droprun/droprun/harness/stats"
)

// Formats are the formats Write writes.
var Formats = []string{"text", "markdown", "csv", "json"}

// View is a history as shown: each series with its changes found at conf.
type View struct {
	Series  []SeriesView `json:"series"`
	Runs    int          `json:"runs"`
	Skipped []Skip       `json:"skipped,omitempty"`
}

// SeriesView is one series with its changes, or why none was reported.
type SeriesView struct {
	Key      Key         `json:"key"`
	Points   []PointView `json:"points"`
	Changes  []Change    `json:"changes,omitempty"`
	NoChange string      `json:"noChange,omitempty"`
}

// PointView is a point with its figures worked out.
type PointView struct {
	Point
	Drops      uint64  `json:"drops"`
	Requests   uint64  `json:"requests"`
	PerRollout float64 `json:"dropsPerRollout"`
	DropRate   float64 `json:"dropRate"`
	// Lo and Hi are the drop rate's interval over rollouts; PerRequest
	// says it treats requests as independent (no rollout of the run
	// measured the dispersion), and is then narrower than it should be.
	Lo         float64 `json:"dropRateLo"`
	Hi         float64 `json:"dropRateHi"`
	PerRequest bool    `json:"perRequestInterval,omitempty"`
	// NoInterval says the point has no interval (no window requests):
	// DropRate, Lo and Hi are then 0 and mean nothing.
	NoInterval bool `json:"noInterval,omitempty"`
}

// ViewOf works out h's figures and change points at conf.
func ViewOf(h *History, conf float64) View {
	v := View{Runs: h.Runs, Skipped: h.Skipped}
	for _, s := range h.Series {
		// Suspect runs are shown but not tested, as the gate leaves them
		// out of the past it searches: both find the same changes.
		var clean []Point
		var at []int // index in s.Points of each clean point
		for i, p := range s.Points {
			if len(p.Suspect) == 0 {
				clean, at = append(clean, p), append(at, i)
			}
		}
		sv := SeriesView{Key: s.Key, Changes: ChangePoints(clean, conf)}
		for i := range sv.Changes {
			sv.Changes[i].At = at[sv.Changes[i].At]
		}
		if len(sv.Changes) == 0 {
			sv.NoChange = NoChange(clean, conf)
		}
		for _, p := range s.Points {
			d, n := p.totals()
			pv := PointView{Point: p, Drops: d, Requests: n, PerRollout: p.PerRollout(),
				DropRate: p.Rate.Point, Lo: p.Rate.Lo, Hi: p.Rate.Hi, PerRequest: p.Rate.Independent()}
			if n == 0 || p.Rate.Empty || math.IsNaN(p.Rate.Point) || math.IsNaN(p.Rate.Lo) || math.IsNaN(p.Rate.Hi) {
				pv.DropRate, pv.Lo, pv.Hi, pv.PerRequest, pv.NoInterval = 0, 0, 0, false, true
			}
			sv.Points = append(sv.Points, pv)
		}
		v.Series = append(v.Series, sv)
	}
	return v
}

// Write writes v in format (one of Formats).
func Write(w io.Writer, v View, format string) error {
	switch format {
	case "text":
		return writeText(w, v)
	case "markdown":
		return writeMarkdown(w, v)
	case "csv":
		return writeCSV(w, v)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	return fmt.Errorf("unknown format %q: use one of %s", format, strings.Join(Formats, ", "))
}

// rateText is a point's drop rate with its interval, and a mark when the
// interval is per request.
func (p PointView) rateText() string {
	if p.NoInterval {
		return "-"
	}
	s := fmt.Sprintf("%s [%s, %s]", pct(p.DropRate), pct(p.Lo), pct(p.Hi))
	if p.PerRequest {
		s += " per request"
	}
	return s
}

func (p PointView) rollouts() string {
	var d []string
	for _, r := range p.Rollouts {
		d = append(d, strconv.FormatUint(r.Drops, 10))
	}
	return strings.Join(d, " ")
}

// verdicts are the series' change lines.
func (s SeriesView) verdicts() []string {
	if len(s.Changes) == 0 {
		return []string{s.NoChange}
	}
	var out []string
	for _, c := range s.Changes {
		out = append(out, c.Say(pointsOf(s.Points)))
	}
	return out
}

func pointsOf(pv []PointView) []Point {
	out := make([]Point, len(pv))
	for i, p := range pv {
		out[i] = p.Point
	}
	return out
}

const dateFormat = "2006-01-02 15:04"

func writeText(w io.Writer, v View) error {
	fmt.Fprintf(w, "%d run(s), %d series; drop rates with their 95%% interval over rollouts (the rollout is the sample); drops count those connection reuse masked\n", v.Runs, len(v.Series))
	for _, s := range v.Series {
		fmt.Fprintf(w, "\n%s\n", s.Key)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  started\trun\tdroprun\timage\trollouts\tdrops/rollout\tdrop rate [95%]\tdrops per rollout\t")
		for _, p := range s.Points {
			mark := ""
			if len(p.Suspect) > 0 {
				mark = "  suspect: " + p.Suspect[0]
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", p.Started.UTC().Format(dateFormat), p.Dir, or(p.Droprun, "?"), p.Image(),
				len(p.Rollouts), stats.FormatSig(p.PerRollout, 3), p.rateText(), p.rollouts(), mark)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, line := range s.verdicts() {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
	return nil // the skipped runs went to stderr as they were read
}

func writeMarkdown(w io.Writer, v View) error {
	fmt.Fprintf(w, "%d run(s), %d series. Drop rates with their 95%% interval over rollouts (the rollout is the sample); drops count those connection reuse masked.\n", v.Runs, len(v.Series))
	for _, s := range v.Series {
		fmt.Fprintf(w, "\n### %s\n\n", mdEscape(s.Key.String()))
		fmt.Fprintln(w, "| started | run | droprun | image | rollouts | drops/rollout | drop rate [95%] | drops per rollout | suspect |")
		fmt.Fprintln(w, "|---|---|---|---|---:|---:|---|---|---|")
		for _, p := range s.Points {
			fmt.Fprintf(w, "| %s | %s | %s | %s | %d | %s | %s | %s | %s |\n", p.Started.UTC().Format(dateFormat), mdEscape(p.Dir), mdEscape(or(p.Droprun, "?")), mdEscape(p.Image()),
				len(p.Rollouts), stats.FormatSig(p.PerRollout, 3), p.rateText(), p.rollouts(), mdEscape(strings.Join(p.Suspect, "; ")))
		}
		fmt.Fprintln(w)
		for _, line := range s.verdicts() {
			fmt.Fprintf(w, "- %s\n", mdEscape(line))
		}
	}
	if len(v.Skipped) > 0 {
		fmt.Fprintln(w, "\nSkipped:")
		for _, sk := range v.Skipped {
			fmt.Fprintf(w, "- %s: %s\n", mdEscape(sk.Dir), mdEscape(sk.Why))
		}
	}
	return nil
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func writeCSV(w io.Writer, v View) error {
	c := csv.NewWriter(w)
	_ = c.Write([]string{"scenario", "variant", "path", "protocol", "kube_proxy", "kubernetes", "app",
		"started", "run", "droprun", "image", "rollouts", "drops", "requests", "drops_per_rollout", "drop_rate", "drop_rate_lo", "drop_rate_hi", "per_request_interval", "rollout_drops", "suspect", "change"})
	for _, s := range v.Series {
		k := s.Key
		for i, p := range s.Points {
			change := ""
			for _, ch := range s.Changes {
				if ch.At == i {
					change = stats.FormatP(ch.P)
				}
			}
			f := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
			_ = c.Write([]string{k.Scenario, k.Variant, k.Path, k.Protocol, k.KubeProxy, k.Kubernetes, k.App,
				p.Started.UTC().Format("2006-01-02T15:04:05Z"), p.Dir, p.Droprun, strings.Join(p.Images, " "), strconv.Itoa(len(p.Rollouts)),
				strconv.FormatUint(p.Drops, 10), strconv.FormatUint(p.Requests, 10), f(p.PerRollout), f(p.DropRate), f(p.Lo), f(p.Hi),
				strconv.FormatBool(p.PerRequest), p.rollouts(), strings.Join(p.Suspect, "; "), change})
		}
	}
	c.Flush()
	return c.Error()
}
