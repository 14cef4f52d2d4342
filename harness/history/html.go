package history

import (
	"html/template"
	"io"

	"github.com/droprun/droprun/harness/stats"
)

// Figure is one series' trend plot as SVG, drawn by harness/plot (which
// this package does not import: plot reads the history, not the reverse).
type Figure struct {
	Title, Caption string
	SVG            []byte
}

// WriteHTML writes v as one self-contained page: per series its key, its
// trend plot (figs[i] for v.Series[i], when there is one), its table and
// its change lines; then the skipped directories.
func WriteHTML(w io.Writer, v View, figs []Figure) error {
	type series struct {
		SeriesView
		SVG      template.HTML
		Caption  string
		Verdicts []string
	}
	type page struct {
		View
		Series []series
	}
	pg := page{View: v}
	for i, s := range v.Series {
		sv := series{SeriesView: s, Verdicts: s.verdicts()}
		if i < len(figs) {
			sv.SVG, sv.Caption = template.HTML(figs[i].SVG), figs[i].Caption // drawn by droprun, not user text
		}
		pg.Series = append(pg.Series, sv)
	}
	return pageTmpl.Execute(w, pg)
}

var pageTmpl = template.Must(template.New("history").Funcs(template.FuncMap{
	"date":  func(p PointView) string { return p.Started.UTC().Format(dateFormat) },
	"sig":   func(x float64) string { return stats.FormatSig(x, 3) },
	"rate":  func(p PointView) string { return p.rateText() },
	"drops": func(p PointView) string { return p.rollouts() },
	"or":    or,
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>droprun history</title>
<style>
body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:.9em;margin:.5em 0}
td,th{border-bottom:1px solid #ddd;padding:.25em .6em;text-align:left}
td.n{text-align:right}
.suspect{color:#777}
.change{color:#b34700;font-weight:bold}
figure{margin:1em 0}
figcaption{font-size:.85em;color:#555}
</style></head><body>
<h1>droprun history</h1>
<p>{{.Runs}} run(s), {{len .Series}} series. Drop rates with their 95% interval over rollouts (the rollout is the sample); drops count those connection reuse masked.</p>
{{range .Series}}
<h2>{{.Key}}</h2>
{{if .SVG}}<figure>{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>{{end}}
<table><tr><th>started (UTC)</th><th>run</th><th>droprun</th><th>image</th><th>rollouts</th><th>drops/rollout</th><th>drop rate [95%]</th><th>drops per rollout</th></tr>
{{range .Points}}<tr{{if .Suspect}} class="suspect" title="suspect: {{index .Suspect 0}}"{{end}}><td>{{date .}}</td><td>{{.Dir}}</td><td>{{or .Droprun "?"}}</td><td>{{.Image}}</td><td class="n">{{len .Rollouts}}</td><td class="n">{{sig .PerRollout}}</td><td>{{rate .}}</td><td>{{drops .}}</td></tr>
{{end}}</table>
{{$changed := .Changes}}{{range .Verdicts}}<p{{if $changed}} class="change"{{end}}>{{.}}</p>{{end}}
{{end}}
{{if .Skipped}}<h2>Skipped</h2><ul>{{range .Skipped}}<li>{{.Dir}}: {{.Why}}</li>{{end}}</ul>{{end}}
</body></html>
`))
