package observe

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// near reports whether got is within tol of want.
func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

// slowScraper answers after a delay.
type slowScraper struct {
	Scraper
	delay time.Duration
}

func (s slowScraper) Scrape(ctx context.Context, pod *corev1.Pod) ([]byte, error) {
	time.Sleep(s.delay)
	return s.Scraper.Scrape(ctx, pod)
}

// A scrape records when it was due, how late its request started and how
// long it took, and Time = Scheduled + late + took.
func TestScrapeTiming(t *testing.T) {
	t.Parallel()
	fs := newFakeScraper()
	fs.set("web-a", metricsText(5, 1), nil)
	const hold = 150 * time.Millisecond
	client := fake.NewClientset(runningPod("web-a", "web", "containerd://a1"))
	// Too long an interval to tick again: the scrapes are the test's.
	c, err := StartAppMetrics(context.Background(), client, ns, "app=web", &bytes.Buffer{}, AppMetricsOptions{Interval: time.Hour, Timeout: 10 * time.Second, Scraper: slowScraper{fs, hold}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	waitFor(t, "the first tick's scrape", func() bool { return lastScrape(c, "web-a") != nil })
	r := lastScrape(c, "web-a")
	if r.Scheduled.IsZero() || r.TookSeconds < hold.Seconds() || r.TookSeconds > hold.Seconds()+5 || r.LateSeconds < 0 || r.LateSeconds > 5 {
		t.Errorf("first scrape: scheduled %v, late %gs, took %gs; want took >= %s", r.Scheduled, r.LateSeconds, r.TookSeconds, hold)
	}
	if sum := r.Scheduled.Add(time.Duration((r.LateSeconds + r.TookSeconds) * float64(time.Second))); sum.Sub(r.Time).Abs() > 2*time.Microsecond {
		t.Errorf("scheduled %v + late + took = %v, want Time %v", r.Scheduled, sum, r.Time)
	}
	from, to, ok := r.ReadBetween()
	if !ok || !to.Equal(r.Time) || !near(to.Sub(from).Seconds(), r.TookSeconds, 1e-6) {
		t.Errorf("ReadBetween = %v, %v, %v; want [Time-took, Time]", from, to, ok)
	}

	// A tick read 300 ms after it was due: late by that much.
	pod := runningPod("web-a", "web", "containerd://a1")
	c.mu.Lock()
	c.pods["web-a"].running++
	c.mu.Unlock()
	const late = 300 * time.Millisecond
	c.scrape(context.Background(), pod, base(pod, "web", "containerd://a1", t0), time.Now().Add(-late))
	r = lastScrape(c, "web-a")
	if r.LateSeconds < late.Seconds() || r.LateSeconds > late.Seconds()+5 {
		t.Errorf("late tick: late %gs, want >= %s", r.LateSeconds, late)
	}
	if got := r.Time.Sub(r.Scheduled).Seconds(); !near(got, r.LateSeconds+r.TookSeconds, 2e-6) {
		t.Errorf("Time - Scheduled = %gs, want late + took = %gs", got, r.LateSeconds+r.TookSeconds)
	}

	// The fields reach the file.
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"scheduled":`, `"lateSeconds":`, `"tookSeconds":`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("record %s lacks %s", b, k)
		}
	}
}

// Files written before scrapes were timed still read, and their scrapes
