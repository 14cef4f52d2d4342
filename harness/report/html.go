package report

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"image"
	_ "image/png" // image.DecodeConfig reads the figures' sizes
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/droprun/droprun/harness/analysis"
	"github.com/droprun/droprun/harness/plot"
	"github.com/droprun/droprun/harness/stats"
	"github.com/droprun/droprun/harness/traffic"
	"github.com/droprun/droprun/harness/variant"
)

//go:embed report.html.tmpl
var htmlSource string

// htmlTemplate is the page. Every value it prints goes through html/template,
// so run data (variant names, event messages, the scenario) is escaped; the
// only URLs it emits are the figures' data: URIs and in-page anchors.
var htmlTemplate = template.Must(template.New("report.html").Parse(htmlSource))

// HTMLInput is what the HTML report shows besides the run's summary.
type HTMLInput struct {
	// Figures are the run's plots. A figure whose Variant names a row of the
	// summary is shown in that row's section, every other one with the whole
	// run. Each is embedded as a data: URI: its PNG, or its SVG when it has
	// no PNG.
	Figures []plot.Figure
	// ScenarioYAML is the scenario as run (the run directory's
	// scenario.yaml), shown verbatim. Its metadata.description, when it has
	// one, heads the page.
	ScenarioYAML []byte
	// RunDir is the run directory, shown as text so a reader can find the
	// raw data. Empty leaves it out.
	RunDir string
	// Generated is when the report was made. The zero time leaves it out,
	// which keeps the page the same for the same run.
	Generated time.Time
}

// HTML writes the report as one self-contained HTML page: no scripts, no
// external resources (the plots are embedded as data: URIs, the style is
// inline), readable on screen and printable. It shows the run's header
// (scenario, cluster, traffic, droprun version), every suspect warning and
// the error that ended the run early, the summary table (the rows of Rows,
// formatted as Table and Markdown format them), each row against the first
// (CompareVariants), the figures, and for each row what it shows (what
// happened in the numbers, what the variant predicts and why), its control
// window, tail and client, hook failures, the per-rollout table and the
// deletion-to-endpoint-removal delays, and at the end the scenario as run.
// Nothing is written when the page cannot be rendered.
func HTML(w io.Writer, sum *analysis.Summary, in HTMLInput) error {
	if sum == nil {
		return errors.New("html report: no summary")
	}
	page, err := buildPage(sum, in)
	if err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	var b bytes.Buffer
	if err := htmlTemplate.Execute(&b, page); err != nil {
		return fmt.Errorf("html report: rendering the template: %w", err)
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	return nil
}

// htmlPage is everything the template prints, already formatted.
type htmlPage struct {
	Title, Description string
	// Facts are the header's label/value pairs.
	Facts       []htmlFact
	Interrupted bool
	Error       string
	Suspect     []string
	// Unseen says which hop the run could not time (Summary.Unseen).
	Unseen    string
	Rows      []htmlRow
	Reference string
	Verdicts  []htmlVerdict
	// Sweeps are the dose-response tables, each with its figure.
	Sweeps    []htmlSweep
	Figures   []htmlFigure
	Variants  []htmlVariant
	Scenario  string
	Version   string
	Generated string
}

type htmlFact struct{ Label, Value string }

type htmlRow struct {
	cells
	ID      string
	Suspect bool
	Dropped bool
}

type htmlVerdict struct {
	Variant, ID string
	// Kind is "better", "worse" or "unclear"; Label says it in words.
	Kind, Label string
	Text        string
}

// htmlSweep is one sweep's table (SweepTablesOf) and its figure
// (plot's "sweep-GROUP"), when drawn.
type htmlSweep struct {
	SweepTable
	ID     string
	Figure *htmlFigure
}

type htmlFigure struct {
	Title, Caption string
	Src            template.URL
	Width, Height  int
}

type htmlVariant struct {
	ID, Name string
	// What is the catalogue's one-line description of the variant asked
	// for ("" for a custom app); Builtin its name.
	What, Builtin string
	Status        string // "clean", "drops", "empty"
	StatusLabel   string
	// Observed is what the numbers say; Expect sets them against what the
	// variant predicts; Why is the fixed explanation, one paragraph each.
	Observed, Expect string
	Why              []string
	Verdict          string
	Suspect          []string
	Bar              []htmlSegment
	Facts            []htmlFact
	HookFailures     []string
	Rollouts         []htmlRollout
	// HasRig is true when some rollout has rig samples: the rollout table
	// then has a rig column.
	HasRig bool
	// HasBalance is true when some rollout has the new pods' shares: the
	// table shows a column for them.
	HasBalance bool
	GapNote    string
	Gaps       []htmlGap
	Figures    []htmlFigure
}

// htmlSegment is one class's part of a row's bar of drops: its colour and
// words come from the class catalogue (traffic.Info).
type htmlSegment struct {
	Class, Colour  string
	Label, Meaning string
	N              string
	Width          string
}

type htmlRollout struct {
	N, Versions, Measured, Live, Duration   string
	Requests, Drops, Classes, Tail, Flushed string
	Baseline                                string
	// Nodes tallies the window by entry node; Slowest names the node whose
	// kube-proxy synced last ("" when not recorded).
	Nodes, Slowest string
	// Hops counts the drops by the hop that failed them (HopsText).
	Hops                                     string
	Dropped, BaselineDirty, MeasuredMismatch bool
	// Rig is the rig's load during the window ("" when not sampled);
	// RigSaturated says the machine was short of CPU.
	Rig          string
	RigSaturated bool
	// Balance is the new pods' shares after the rollout (BalanceText), ""
	// when not measured; Unbalanced marks a pod under half an even share.
	Balance    string
	Unbalanced bool
	// Story tells the rollout pod by pod (report.Story); Explained says
	// how much of its drops the race windows explain.
	Story     []string
	Explained string
}

type htmlGap struct{ Pod, Unready, Removed string }

func buildPage(sum *analysis.Summary, in HTMLInput) (*htmlPage, error) {
	p := &htmlPage{Title: "droprun report", Interrupted: sum.Interrupted, Error: sum.Error, Suspect: sum.Suspect, Unseen: sum.Unseen,
		Scenario: string(in.ScenarioYAML), Version: sum.Cluster.DroprunVer}
	if sum.Scenario != "" {
		p.Title += ": " + sum.Scenario
	}
	var meta struct {
		Metadata struct {
			Description string `json:"description"`
		} `json:"metadata"`
	}
	if yaml.Unmarshal(in.ScenarioYAML, &meta) == nil {
		p.Description = meta.Metadata.Description
	}
	p.Facts = headerFacts(sum, in)
	if !in.Generated.IsZero() {
		p.Generated = in.Generated.UTC().Format("2006-01-02 15:04:05 MST")
	}

	rows := Rows(sum)
	ids := make([]string, len(rows))
	byName := map[string]int{}
	for k, r := range rows {
		ids[k] = anchor(k, r.Variant)
		byName[r.Variant] = k
		p.Rows = append(p.Rows, htmlRow{cells: r.cells(), ID: ids[k], Suspect: len(r.Suspect) > 0, Dropped: r.Drops > 0})
	}
	if len(rows) > 0 {
		p.Reference = rows[0].Variant
	}
	var verdictOf []string
	p.Verdicts, verdictOf = verdicts(sum, rows, ids)

	for k, t := range SweepTablesOf(sum) {
		p.Sweeps = append(p.Sweeps, htmlSweep{SweepTable: t, ID: "s" + anchor(k, t.Group)}) // row anchors start with v
	}
	perRow, err := p.placeFigures(in.Figures, byName, len(rows))
	if err != nil {
		return nil, err
	}

	for k, r := range rows {
		_, later := byName[r.Variant+introducingSuffix]
		hv := variantSection(r, sum.Variants[k], later)
		hv.ID, hv.Figures = ids[k], perRow[k]
		if k > 0 {
			hv.Verdict = verdictOf[k] + "."
		}
		p.Variants = append(p.Variants, hv)
	}
	return p, nil
}

// verdicts compares each row after the first with the first
// (compareVariants): the verdicts the page lists, and each row's verdict
// text by row index ("" for the first).
func verdicts(sum *analysis.Summary, rows []Row, ids []string) ([]htmlVerdict, []string) {
	var out []htmlVerdict
	verdictOf := make([]string, len(rows))
	for k, c := range compareVariants(sum) {
		v := htmlVerdict{Variant: rows[k+1].Variant, ID: ids[k+1], Text: c.Verdict, Kind: "unclear", Label: "no difference detected"}
		switch {
		case sum.Variants[k+1].WindowRequests == 0 || sum.Variants[0].WindowRequests == 0:
			v.Label = "cannot compare"
		case c.Significant && c.Ratio.Point < 1:
			v.Kind, v.Label = "better", "drops less"
		case c.Significant:
			v.Kind, v.Label = "worse", "drops more"
		case sum.Variants[k+1].Drops+sum.Variants[0].Drops == 0:
			v.Label = "neither dropped"
		case c.AloneOnly(1 - stats.DefaultConfidence):
			v.Label = "undecided across the family"
		}
		out = append(out, v)
		verdictOf[k+1] = c.Verdict
	}
	return out, verdictOf
}

// placeFigures embeds each figure where the page shows it: a sweep's
// figure ("sweep-GROUP") with its table in p.Sweeps, a row's figure in
// the row's section (returned by row index, byName giving the index of a
// row name), every other one with the whole run in p.Figures.
func (p *htmlPage) placeFigures(figs []plot.Figure, byName map[string]int, nrows int) ([][]htmlFigure, error) {
	sweepOf := map[string]int{} // figure name -> index in p.Sweeps
	for k, s := range p.Sweeps {
		sweepOf["sweep-"+s.Group] = k
	}
	perRow := make([][]htmlFigure, nrows)
	for _, f := range figs {
		hf, err := figure(f)
		if err != nil {
			return nil, err
		}
		if k, ok := sweepOf[f.Name]; ok && f.Variant == "" {
			p.Sweeps[k].Figure = &hf
			continue
		}
		if k, ok := byName[f.Variant]; ok && f.Variant != "" {
			perRow[k] = append(perRow[k], hf)
		} else {
			p.Figures = append(p.Figures, hf)
		}
	}
	return perRow, nil
}

// variantSection is row r's section of the page, but for its anchor, its
// figures and its verdict against the first row. hasIntroducing is true
// for the later rollouts of a variant whose first rollout is its own row.
func variantSection(r Row, v analysis.VariantSummary, hasIntroducing bool) htmlVariant {
	hv := htmlVariant{Name: r.Variant, Builtin: v.Builtin, Suspect: v.Suspect, HookFailures: v.HookFailures,
		Bar: classBar(r), Facts: windowFacts(r, v), Rollouts: rolloutRows(v)}
	if info, ok := variant.Lookup(v.Builtin); ok {
		hv.What = strings.ReplaceAll(info.Summary, "`", "")
	}
	if strings.HasSuffix(r.Variant, introducingSuffix) && len(v.Rollouts) > 0 && v.Rollouts[0].MeasuredVariant != "" {
		first := fmt.Sprintf("the first rollout, from %s to %s", v.Rollouts[0].MeasuredVariant, orUnknown(v.Builtin))
		if hv.What != "" {
			first += " (" + hv.What + ")"
		}
		hv.What = first
	}
	switch {
	case r.WindowRequests == 0:
		hv.Status, hv.StatusLabel = "empty", "nothing measured"
	case r.Drops == 0:
		hv.Status, hv.StatusLabel = "clean", "dropped nothing"
	default:
		hv.Status, hv.StatusLabel = "drops", fmt.Sprintf("dropped %s", stats.FormatCount(r.Drops))
	}
	hv.Observed, hv.Expect, hv.Why = story(r, v, hasIntroducing)
	hv.GapNote, hv.Gaps = gaps(v.Gaps)
	for _, ro := range hv.Rollouts {
		hv.HasRig = hv.HasRig || ro.Rig != ""
		hv.HasBalance = hv.HasBalance || ro.Balance != ""
	}
	return hv
}

// introducingSuffix marks the row of a variant's first rollout when the
// variant starts from another one (the trap).
const introducingSuffix = "/introducing"

func headerFacts(sum *analysis.Summary, in HTMLInput) []htmlFact {
	var f []htmlFact
	add := func(label, value string) {
		if value != "" {
			f = append(f, htmlFact{label, value})
		}
	}
	if !sum.Started.IsZero() {
		when := sum.Started.UTC().Format("2006-01-02 15:04:05 MST")
		if !sum.Finished.IsZero() && sum.Finished.After(sum.Started) {
			when += " to " + sum.Finished.UTC().Format("15:04:05") + " (" + sum.Finished.Sub(sum.Started).Round(time.Second).String() + ")"
		}
		add("Run", when)
	}
	add("Run directory", in.RunDir)

	c := sum.Cluster
	var cl []string
	switch {
	case c.Kind:
		cl = append(cl, "kind cluster "+quoteName(c.Name))
	case c.Name != "":
		cl = append(cl, "cluster "+quoteName(c.Name))
	}
	if c.Nodes > 0 {
		cl = append(cl, plural(c.Nodes, "node", "nodes"))
	}
	if c.Kubernetes != "" {
		cl = append(cl, "Kubernetes "+c.Kubernetes)
	}
	if c.KubeProxyMode != "" {
		cl = append(cl, "kube-proxy "+c.KubeProxyMode)
	}
	if c.NodeImage != "" {
		cl = append(cl, "node image "+c.NodeImage)
	}
	add("Cluster", strings.Join(cl, ", "))

	t := sum.Traffic
	if t.Rate > 0 || t.URL != "" {
		var tr []string
		if t.Rate > 0 {
			tr = append(tr, fmt.Sprintf("%d requests/s", t.Rate))
		}
		switch {
		case len(t.Targets) > 1:
			var nodes []string
			for _, tg := range t.Targets {
				nodes = append(nodes, tg.Node)
			}
			tr = append(tr, fmt.Sprintf("%s round robin over %d entry nodes (%s) from %s", t.Method, len(t.Targets), strings.Join(nodes, ", "), t.URL))
		case t.URL != "":
			tr = append(tr, strings.TrimSpace(t.Method+" "+t.URL))
		}
		if t.Target != "" {
			tr = append(tr, "through the "+t.Target)
		}
		tr = append(tr, t.ProtocolOf().Text())
		if t.Connections > 0 {
			tr = append(tr, plural(t.Connections, "connection", "connections")+" per target")
		}
		if t.Timeout != "" {
			tr = append(tr, "timeout "+t.Timeout)
		}
		add("Traffic", strings.Join(tr, ", "))
	}
	var wn []string
	if t.Rollouts > 0 {
		wn = append(wn, plural(t.Rollouts, "rollout", "rollouts")+" per variant")
	}
	if t.Control != "" {
		wn = append(wn, "control "+t.Control)
	}
	if t.Settle != "" {
		wn = append(wn, "settle "+t.Settle+" after the old pods are gone")
	}
	if t.Between != "" {
		wn = append(wn, t.Between+" between rollouts")
	}
	add("Windows", strings.Join(wn, ", "))
	add("droprun", c.DroprunVer)
	return f
}

func quoteName(s string) string {
	if s == "" {
		return ""
	}
	return strconv.Quote(s)
}

// anchor is a row's element id: unique, and safe whatever the row's name.
func anchor(k int, name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "v%d", k)
	dash := true
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			if dash {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		default:
			dash = true
		}
	}
	return b.String()
}

var pngMagic = []byte("\x89PNG\r\n\x1a\n")

// figure embeds f as a data: URI: its PNG, or its SVG without one.
func figure(f plot.Figure) (htmlFigure, error) {
	hf := htmlFigure{Title: f.Title, Caption: f.Caption}
	if hf.Title == "" {
		hf.Title = f.Name
	}
	switch {
	case len(f.PNG) > 0:
		if !bytes.HasPrefix(f.PNG, pngMagic) {
			return hf, fmt.Errorf("figure %q: its PNG is not a PNG image", f.Name)
		}
		cfg, _, err := image.DecodeConfig(bytes.NewReader(f.PNG))
		if err != nil {
			return hf, fmt.Errorf("figure %q: %w", f.Name, err)
		}
		hf.Width, hf.Height = cfg.Width, cfg.Height
		hf.Src = template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(f.PNG))
	case len(f.SVG) > 0:
		hf.Src = template.URL("data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(f.SVG))
	default:
		return hf, fmt.Errorf("figure %q has neither a PNG nor an SVG", f.Name)
	}
	return hf, nil
}

// classBar is the drops of r split by class, for a stacked bar.
func classBar(r Row) []htmlSegment {
	if r.Drops == 0 {
		return nil
	}
	var segs []htmlSegment
	for _, c := range failedClasses(r.Classes) {
		n, info := r.Classes[c], traffic.Info(c)
		segs = append(segs, htmlSegment{Class: string(c), Colour: info.Colour, Label: info.Label, Meaning: info.Meaning, N: stats.FormatCount(n),
			Width: strconv.FormatFloat(100*float64(n)/float64(r.Drops), 'f', 2, 64) + "%"})
	}
	return segs
}

// failedClasses lists the failed classes present in m, most frequent first
// (ties in the order of traffic.Classes).
func failedClasses(m map[traffic.Class]uint64) []traffic.Class {
	var cs []traffic.Class
	for _, c := range traffic.Classes() {
		if c.Failed() && m[c] > 0 {
			cs = append(cs, c)
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return m[cs[i]] > m[cs[j]] })
	return cs
}

func windowFacts(r Row, v analysis.VariantSummary) []htmlFact {
	var f []htmlFact
	control := fmt.Sprintf("%s in %s requests before the first rollout", plural64(v.Control.Failures, "failure", "failures"), stats.FormatCount(v.Control.Requests))
	switch {
	case v.Control.Requests == 0:
		control = "none: nothing to compare the rollout windows with"
	case v.Idle.ExplainsControl(v.Control):
		control += fmt.Sprintf(" (%s): the app closing idle connections before the client does (see Idle timeouts); at that rate the rollout windows would show about %s failures, and drops near that are not the rollout's",
			classList(v.Control.Classes), stats.FormatSig(r.ExpectedFloor, 2))
	case v.Control.Failures > 0:
		control += fmt.Sprintf(" (%s): the rig's own floor; at that rate the rollout windows would show about %s failures, and drops near that are noise",
			classList(v.Control.Classes), stats.FormatSig(r.ExpectedFloor, 2))
	default:
		control += ": a clean baseline"
	}
	f = append(f, htmlFact{"Control window", control})
	tail := fmt.Sprintf("%s in %s requests after the windows closed", plural64(v.Tail.Failures, "failure", "failures"), stats.FormatCount(v.Tail.Requests))
	if v.Tail.Failures > 0 {
		tail += fmt.Sprintf(" (%s): new connections still sent to a pod that was gone, reported apart from the drops", classList(v.Tail.Classes))
	}
	f = append(f, htmlFact{"Tail", tail})
	if v.Outside.Requests > 0 {
		f = append(f, htmlFact{"Outside every window", fmt.Sprintf("%s requests, %s", stats.FormatCount(v.Outside.Requests), plural64(v.Outside.Failures, "failure", "failures"))})
	}
	if v.ControlRig != nil {
		f = append(f, htmlFact{"Rig during the control", v.ControlRig.String()})
	}
	if v.SaturatedRollouts > 0 {
		f = append(f, htmlFact{"Rig short of CPU", fmt.Sprintf("in %d of %d rollouts; %s in flight while the rig stalled %s excused (counted apart); "+
			"refused, reset, EOF and 5xx are never excused. Without the excused ones the windows had %s in %s requests", v.SaturatedRollouts, len(v.Rollouts),
			plural64(v.Excused, "timeout", "timeouts"), verb64(v.Excused), plural64(v.Measurable.Failures, "failure", "failures"), stats.FormatCount(v.Measurable.Requests))})
	}
	if v.Masked > 0 {
		f = append(f, htmlFact{"Masked by keep-alive", MaskedText(v)})
	}
	if v.FrontResent > 0 {
		f = append(f, htmlFact{"Resent by the front", FrontResentText(v)})
	}
	if v.Idle != nil {
		f = append(f, htmlFact{"Idle timeouts", strings.TrimPrefix(IdleText(v.Idle), "idle timeouts: ")})
	}
	if len(v.ByNode) > 0 {
		f = append(f, htmlFact{"By entry node", NodesText(v.ByNode)})
	}
	if len(v.Clocks) > 0 {
		f = append(f, htmlFact{"Generator clocks", strings.TrimPrefix(ClocksText(v.Clocks), "generator clocks: ")})
	}
	if sv := v.Server; sv != nil && sv.Counter != "" {
		f = append(f, htmlFact{"Pods' own count", CounterText(sv)})
	} else if sv == nil && v.NoServerView != "" {
		f = append(f, htmlFact{"Pods' own count", v.NoServerView})
	} else if sv != nil {
		pods := fmt.Sprintf("the pods answered %s requests (%s 2xx); the client sent %s and got %s 2xx",
			stats.FormatCount(uint64(max(sv.PodsAnswered, 0))), stats.FormatCount(uint64(max(sv.PodsAnswered2xx, 0))), stats.FormatCount(sv.ClientSent), stats.FormatCount(sv.ClientGot2xx))
		pods += fmt.Sprintf(", counted from %s, %d with their exit totals", plural(sv.Pods, "pod", "pods"), sv.PodsFinal)
		if sv.Uncertain > 0 {
			pods += fmt.Sprintf(", %d not exact", sv.Uncertain)
		}
		if sv.ScrapeErrors > 0 {
			pods += fmt.Sprintf(" (%s)", plural(sv.ScrapeErrors, "scrape error", "scrape errors"))
		}
		f = append(f, htmlFact{"Pods' own count", pods})
	}
	if c := v.Client; c.AskedRate > 0 {
		client := fmt.Sprintf("%s of %s requests/s", stats.FormatSig(c.AchievedRate, 4), stats.FormatSig(c.AskedRate, 4))
		if c.CPU > 0 {
			client += fmt.Sprintf(", %s CPU cores", stats.FormatSig(c.CPU, 2))
		}
		if c.WorkersExhausted {
			client += ", every worker busy at some point: requests went out late"
		}
		f = append(f, htmlFact{"Client", client})
	}
	return f
}

func rolloutRows(v analysis.VariantSummary) []htmlRollout {
	var out []htmlRollout
	for _, r := range v.Rollouts {
		live := r.LiveTemplate
		if r.LivePods != nil && r.MeasuredVariant != "custom" {
			// Bookshop: what Detect found, then the settings themselves (a
			// custom app's LiveTemplate is the settings already).
			live += "; " + r.LivePods.String()
		}
		hr := htmlRollout{N: strconv.Itoa(r.N), Measured: r.MeasuredVariant, Live: live, Duration: r.Duration,
			Requests: stats.FormatCount(r.Window.Requests), Drops: stats.FormatCount(r.Window.Failures), Classes: classList(r.Window.Classes),
			Dropped: r.Window.Failures > 0, BaselineDirty: !r.BaselineClean}
		if r.From != "" || r.To != "" {
			hr.Versions = r.From + " → " + r.To
		}
		if hr.Duration == "" {
			hr.Duration = "did not complete"
		}
		hr.Tail = fmt.Sprintf("%s of %s", stats.FormatCount(r.Tail.Failures), stats.FormatCount(r.Tail.Requests))
		if r.Tail.Failures > 0 {
			hr.Tail += " (" + classList(r.Tail.Classes) + ")"
		}
		hr.Flushed = flushed(r.ConntrackFlushed)
		hr.Hops = HopsText(r.ByHop)
		hr.Nodes = "–"
		if len(r.ByNode) > 0 {
			hr.Nodes = NodesText(r.ByNode)
		}
		if r.SlowestNode != "" {
			hr.Slowest = fmt.Sprintf("slowest kube-proxy: %s, synced %.2f s after the deletion request", r.SlowestNode, r.SlowestSync)
			if r.ProgrammingLatency > 0 {
				hr.Slowest += fmt.Sprintf("; programming latency up to %.2f s", r.ProgrammingLatency)
			}
		}
		if r.Rig != nil {
			hr.Rig, hr.RigSaturated = r.Rig.String(), r.Rig.Saturated
		}
		if b := r.Balance; b != nil {
			hr.Balance, hr.Unbalanced = BalanceText(b), b.Undecided == "" && b.Least < 0.5
		}
		hr.Story, hr.Explained = Story(v, r.N), ExplainedText(r.Explained)
		switch {
		case !r.BaselineClean && r.BaselineWait != "":
			hr.Baseline = "never clean (waited " + r.BaselineWait + ")"
		case !r.BaselineClean:
			hr.Baseline = "never clean"
		case r.BaselineWait != "":
			hr.Baseline = "clean after " + r.BaselineWait
		default:
			hr.Baseline = "–"
		}
		want := v.Builtin
		if strings.HasSuffix(v.Variant, introducingSuffix) {
			want = ""
		}
		hr.MeasuredMismatch = want != "" && r.MeasuredVariant != "" && r.MeasuredVariant != "custom" && r.MeasuredVariant != want
		out = append(out, hr)
	}
	return out
}

// flushed says how many stale conntrack entries were deleted, per node.
func flushed(m map[string]int) string {
	if m == nil {
		return "–"
	}
	var parts []string
	total := 0
	for node, n := range m {
		total += n
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", node, n))
		}
	}
	if total == 0 {
		return "0"
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

func gaps(gs []analysis.Gap) (string, []htmlGap) {
	if len(gs) == 0 {
		return "", nil
	}
	var rows []htmlGap
	var removed []float64
	for _, g := range gs {
		rows = append(rows, htmlGap{Pod: g.Pod, Unready: secs(g.EndpointUnready), Removed: secs(g.EndpointRemoved)})
		if g.EndpointRemoved >= 0 {
			removed = append(removed, g.EndpointRemoved)
		}
	}
	if len(removed) == 0 {
		return "No deleted pod was seen leaving the EndpointSlice.", rows
	}
	slices.Sort(removed)
	med := removed[len(removed)/2]
	if len(removed)%2 == 0 {
		med = (removed[len(removed)/2-1] + removed[len(removed)/2]) / 2
	}
	note := fmt.Sprintf("From the deletion of an old pod to its endpoint leaving the EndpointSlice: median %s s", stats.FormatSig(med, 2))
	if len(removed) > 1 {
		note += fmt.Sprintf(", %s–%s s over %s", stats.FormatSig(removed[0], 2), stats.FormatSig(removed[len(removed)-1], 2), plural(len(removed), "pod", "pods"))
	}
	return note + ". Every node's kube-proxy rewrites its rules only after that, and nothing makes the kubelet's SIGTERM wait for it.", rows
}

func secs(x float64) string {
	if x < 0 {
		return "not seen"
	}
	return stats.FormatSig(x, 2) + " s"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return stats.FormatCount(uint64(max(n, 0))) + " " + many
}

func plural64(n uint64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return stats.FormatCount(n) + " " + many
}

// percent is part's share of whole, to two significant digits, never
// rounded up to 100% when part is not all of whole.
func percent(part, whole uint64) string {
	if whole == 0 {
		return "0%"
	}
	p := stats.FormatSig(100*float64(part)/float64(whole), 2)
	if p == "100" && part < whole {
		return "over 99%"
	}
	return p + "%"
}

// raceClasses are the SIGTERM/endpoint race's signature: the catalogue's
// classes with traffic.ClassInfo.Race.
var raceClasses = func() []traffic.Class {
	var cs []traffic.Class
	for _, ci := range traffic.Catalogue() {
		if ci.Race {
			cs = append(cs, ci.Class)
		}
	}
	return cs
}()

// story says what row r shows: what its numbers are (observed), how they
// compare with what the variant predicts (expect), and why the variant
// behaves as it does, one paragraph each. hasIntroducing is true for the
// later rollouts of a variant whose first rollout is its own row.
func story(r Row, v analysis.VariantSummary, hasIntroducing bool) (observed, expect string, why []string) {
	measured := measuredVariant(v)
	why = whyParagraphs(r, v, measured, hasIntroducing)
	if r.WindowRequests == 0 {
		return "Nothing was measured: no request fell inside a rollout window.", "", why
	}
	return observedText(r), expectText(r, v, measured), why
}

// measuredVariant is the variant v's numbers are about: the built-in
// variant detected in the live template of the pods the rollouts deleted
// when the rollouts agree on one, else the one asked for; "" for a custom
// app.
func measuredVariant(v analysis.VariantSummary) string {
	if v.Builtin == "" {
		return ""
	}
	seen, agree := "", true
	for _, ro := range v.Rollouts {
		switch {
		case ro.MeasuredVariant == "":
		case seen == "":
			seen = ro.MeasuredVariant
		case ro.MeasuredVariant != seen:
			agree = false
		}
	}
	if seen != "" && agree {
		return seen
	}
	return v.Builtin
}

// whyParagraphs explain row r: which pods its rollouts deleted, when that
// is not simply the variant asked for, then why the variant measured
// behaves as it does (its catalogue entry's Why, or how to read a custom
// app's classes).
func whyParagraphs(r Row, v analysis.VariantSummary, measured string, hasIntroducing bool) []string {
	var why []string
	switch {
	case strings.HasSuffix(r.Variant, introducingSuffix):
		why = append(why, fmt.Sprintf("This is the rollout that introduced %s, and it deletes the old pods: the ones whose template does not have it. "+
			"A pod's spec is fixed when the pod is created; applying a new template does not retrofit anything onto running pods. "+
			"A change to the pod template applies to the pods the change creates, never to the pods it destroys, so this rollout "+
			"runs under the old rules (%s) and the change takes effect on the next one.", orUnknown(v.Builtin), orUnknown(measured)))
	case hasIntroducing:
		why = append(why, fmt.Sprintf("The rollouts after the one that introduced %s: the pods they delete carry it, so these "+
			"rollouts measure %s itself.", v.Builtin, v.Builtin))
	case measured != v.Builtin && measured != "":
		why = append(why, fmt.Sprintf("The rollouts deleted pods of %s, not of %s as asked (see the warnings): the numbers are %s's.",
			measured, v.Builtin, measured))
	}
	if info, ok := variant.Lookup(measured); ok {
		why = append(why, info.Why)
	} else if v.Builtin == "" || measured == "custom" {
		why = append(why, variant.CustomWhy)
	}
	return why
}

// observedText says what row r's numbers are; r measured something.
func observedText(r Row) string {
	if r.Drops == 0 {
		return fmt.Sprintf("It dropped nothing in %s (%s).", plural(r.Rollouts, "rollout", "rollouts"), r.Bound)
	}
	in := fmt.Sprintf("%d of %d rollouts", r.RolloutsWithDrops, r.Rollouts)
	if r.Rollouts == 1 {
		in = "its one rollout"
	}
	wide := ""
	if r.DropRateWideHi > 0 {
		wide = fmt.Sprintf("; %s–%s for heavy-tailed or rare, very bursty drops, which that interval does not cover", stats.FormatSig(r.DropRateWideLo, 2), stats.FormatSig(r.DropRateWideHi, 2))
	}
	observed := fmt.Sprintf("It dropped %s of %s requests (drop rate %s, 95%% CI %s–%s%s) in %s", stats.FormatCount(r.Drops), stats.FormatCount(r.WindowRequests),
		stats.FormatSig(r.DropRate, 2), stats.FormatSig(r.DropRateLo, 2), stats.FormatSig(r.DropRateHi, 2), wide, in)
	if r.RolloutsWithDrops > 1 {
		observed += fmt.Sprintf(", at most %s in one", stats.FormatCount(r.MaxRolloutDrops))
	}
	return observed + "; " + mix(r) + "."
}

// expectText sets row r's numbers against what the variant measured
// predicts (variant.Info.Drops), then says what else weighs on them:
// excused timeouts, the rig's floor, suspect flags. r measured something.
func expectText(r Row, v analysis.VariantSummary, measured string) string {
	var race uint64
	for _, c := range raceClasses {
		race += r.Classes[c]
	}
	timeouts := r.Classes[traffic.ClassTimeout]
	var e []string
	info, known := variant.Lookup(measured)
	switch {
	case !known:
		if r.Drops > 0 {
			e = append(e, fmt.Sprintf("%s of the drops are refused connections, resets, EOFs or 502s and %s are timeouts.",
				percent(race, r.Drops), percent(timeouts, r.Drops)))
		}
	case info.Drops:
		e = append(e, racerExpectation(r, race, timeouts))
	default:
		e = append(e, fixExpectation(r, race, timeouts)...)
	}
	if v.Excused > 0 {
		e = append(e, fmt.Sprintf("%s were in flight while the rig stalled and are excused; without them the windows dropped %s of %s requests.",
			plural64(v.Excused, "timeout", "timeouts"), stats.FormatCount(v.Measurable.Failures), stats.FormatCount(v.Measurable.Requests)))
	}
	if r.ExpectedFloor > 0 {
		e = append(e, fmt.Sprintf("The control window's failure rate alone predicts about %s failures here.", stats.FormatSig(r.ExpectedFloor, 2)))
	}
	if len(r.Suspect) > 0 {
		e = append(e, "This row is flagged suspect (below): its numbers are not a measurement until that is fixed.")
	}
	return strings.Join(e, " ")
}

// racerExpectation sets row r, of a variant expected to drop requests,
// against that expectation; race and timeouts count its drops of the
// race's classes and its timeouts.
func racerExpectation(r Row, race, timeouts uint64) string {
	switch {
	case r.Drops > 0 && 2*race >= r.Drops:
		return fmt.Sprintf("That is the expected result: %s of the drops are refused connections, resets, EOFs or 502s, "+
			"the signature of a process that stopped listening while traffic was still routed to it.", percent(race, r.Drops))
	case r.Drops > 0:
		return fmt.Sprintf("That is the expected result, though most drops here are timeouts (%s) rather than refused "+
			"connections: new connections sent to a pod address that no longer answered at all.", percent(timeouts, r.Drops))
	default:
		return fmt.Sprintf("This variant is expected to drop requests, and this run saw none in %s. The race is a race: this many "+
			"rollouts may not hit it, so read this as not seen yet, not as fixed.", plural(r.Rollouts, "rollout", "rollouts"))
	}
}

// fixExpectation sets row r, of a fix, expected to drop nothing, against
// that expectation, as racerExpectation does.
func fixExpectation(r Row, race, timeouts uint64) []string {
	switch {
	case r.Drops == 0:
		return []string{"That is what the fix predicts. Zero drops bound the rate, they do not prove it is zero: more rollouts tighten the bound."}
	case timeouts == r.Drops && r.Drops <= strayDrops:
		return []string{fmt.Sprintf("The fix predicts no drops. %s and no refused connection, reset or EOF looks like the stray "+
			"timeout of a busy rig rather than the race, whose signature is refused connections; more rollouts would tell.",
			capitalize(plural64(r.Drops, "timeout", "timeouts")))}
	}
	e := []string{"The fix predicts no drops, and this row dropped anyway."}
	if race == 0 {
		lead := "None of the drops is"
		if timeouts == r.Drops {
			lead = "Every drop is a timeout; none is"
		}
		return append(e, lead+" a refused connection, reset or EOF, which is not the signature of the SIGTERM race "+
			"(a closed listener refuses at once): suspect the rig before the variant, and look at the client, the tail and the plots for bursts.")
	}
	return append(e, fmt.Sprintf("%s of them are refused connections, resets, EOFs or 502s: pods stopped listening while traffic "+
		"was still routed to them, so the wait did not outlast the endpoint removal here.", percent(race, r.Drops)))
}

// mix says which classes r's drops were: "all 000:timeout", "mostly
// 000:refused (62%)" or "spread over 000:eof (40%), 000:refused (35%) and
// 000:timeout (20%)".
func mix(r Row) string {
	cs := failedClasses(r.Classes)
	if len(cs) == 0 {
		return "no failed class recorded"
	}
	if len(cs) == 1 {
		return "all " + string(cs[0])
	}
	if 2*r.Classes[cs[0]] > r.Drops {
		return fmt.Sprintf("mostly %s (%s)", cs[0], percent(r.Classes[cs[0]], r.Drops))
	}
	var parts []string
	for _, c := range cs[:min(3, len(cs))] {
		parts = append(parts, fmt.Sprintf("%s (%s)", c, percent(r.Classes[c], r.Drops)))
	}
	return "spread over " + strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// strayDrops is the most drops, all of them timeouts, that story calls
// stray timeouts rather than a failure of a fix.
const strayDrops = 3

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown variant"
	}
	return s
}

// verb64 is "was" or "were" for n.
func verb64(n uint64) string {
	if n == 1 {
		return "was"
	}
	return "were"
}
