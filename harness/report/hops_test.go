package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/droprun/droprun/harness/analysis"
)

// TestHopsAndUnseen: a rollout's drops by the hop that failed them show in
// the table and the HTML, most first; a run through the user's own
// ingress says, in the table, the Markdown and the HTML, that its per-hop
// times are unavailable.
func TestHopsAndUnseen(t *testing.T) {
	if got, want := HopsText(map[string]uint64{analysis.HopBeforeFront: 3, "front pod traefik-1": 212, "front pod traefik-2": 212}),
		"front pod traefik-1 212, front pod traefik-2 212, "+analysis.HopBeforeFront+" 3"; got != want {
		t.Errorf("HopsText = %q, want %q", got, want)
	}
	sum := summary()
	sum.Variants[0].Rollouts[1].ByHop = map[string]uint64{"front pod traefik-1": 690, analysis.HopBeforeFront: 10}
	sum.Unseen = "per-hop times unavailable: the requests went to shop.example.com"
	var table, md bytes.Buffer
	if err := Table(&table, sum); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"no-prestop rollout 2: drops by the hop that failed them: front pod traefik-1 690, " + analysis.HopBeforeFront + " 10",
		"note: per-hop times unavailable: the requests went to shop.example.com"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if err := Markdown(&md, sum); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "**note:** per-hop times unavailable") {
		t.Errorf("markdown lacks the note:\n%s", md.String())
	}
	page := renderHTML(t, sum, HTMLInput{})
	for _, want := range []string{"by hop: front pod traefik-1 690", `id="unseen"`, "per-hop times unavailable: the requests went to shop.example.com"} {
		if !strings.Contains(page, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}
