package analysis

import (
	"strings"
	"testing"

	"github.com/droprun/droprun/harness/analysis/analysistest"
	"github.com/droprun/droprun/harness/appmetrics"
)

// scrape is pod's counter reading at second s: version handler answers.
func scrape(pod string, s float64, answered int) appmetrics.Record {
	return appmetrics.Record{Time: analysistest.At(s), Started: analysistest.At(0), Pod: pod, Source: appmetrics.SourceScrape,
		Requests: answered, ByHandler: appmetrics.Counts{"version": {"200": answered}}}
}

// Each new pod's share is what it answered between the span's two
// readings over an even share; the old pod, gone before the span, is not
// one of them.
func TestBalanceShares(t *testing.T) {
	in := &input{app: []appmetrics.Record{
		scrape("web-old", 9, 500), // last read before the span: gone
		scrape("web-a", 10, 100), scrape("web-a", 40, 700),
		scrape("web-b", 10, 50), scrape("web-b", 40, 350),
		scrape("web-c", 10, 0), scrape("web-c", 40, 0),
	}}
	p := &plan{balance: map[int]balanceEdges{1: {analysistest.At(10.01), analysistest.At(40.01)}}}
	rs := []RolloutSummary{{N: 1}, {N: 2}}
	in.addBalance(p, rs)
	b := rs[0].Balance
	if b == nil || rs[1].Balance != nil {
		t.Fatalf("balances %v, %v: want rollout 1's only", rs[0].Balance, rs[1].Balance)
	}
	if len(b.Pods) != 3 || b.Answered != 900 || b.Undecided != "" {
		t.Fatalf("balance %+v: want 3 pods, 900 answered, decided", *b)
	}
	// Even share: 300 each.
	want := map[string]float64{"web-a": 2, "web-b": 1, "web-c": 0}
	for _, ps := range b.Pods {
		if ps.OfEven != want[ps.Pod] {
			t.Errorf("%s: %.3f of an even share, want %.3f", ps.Pod, ps.OfEven, want[ps.Pod])
		}
	}
	if b.Least != 0 || b.Seconds != 30 {
		t.Errorf("least %.3f over %.1f s; want 0 over 30 s", b.Least, b.Seconds)
	}
}

// A span too thin to tell, or a pod not read at its end, is undecided,
// and says why.
func TestBalanceUndecided(t *testing.T) {
	edges := balanceEdges{analysistest.At(10.01), analysistest.At(40.01)}
	for _, tc := range []struct {
		name string
		app  []appmetrics.Record
		want string
	}{
		{"too few requests", []appmetrics.Record{scrape("web-a", 10, 0), scrape("web-a", 40, 30), scrape("web-b", 10, 0), scrape("web-b", 40, 30)}, "at least 50 per pod"},
		{"not read at the end", []appmetrics.Record{scrape("web-a", 10, 0), scrape("web-a", 35, 300), scrape("web-b", 10, 0), scrape("web-b", 40, 300)}, "web-a (last read 5.01s before"},
		{"first read after the start", []appmetrics.Record{scrape("web-a", 12, 0), scrape("web-a", 40, 300), scrape("web-b", 10, 0), scrape("web-b", 40, 300)}, "web-a (first read after"},
		{"nobody read", []appmetrics.Record{scrape("web-a", 5, 0)}, "no pod was read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := balanceOf(appmetrics.Totals(tc.app, edges.start, edges.end), edges)
			if !strings.Contains(b.Undecided, tc.want) {
				t.Errorf("undecided %q, want it to say %q", b.Undecided, tc.want)
			}
		})
	}
}
