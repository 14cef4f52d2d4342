package pods

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/droprun/droprun/harness/generators"
	"github.com/droprun/droprun/harness/testbed/render"
	"github.com/droprun/droprun/harness/traffic"
)

var t0 = time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)

func pod(name string, index int, created time.Time, ready bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(created),
			Labels: map[string]string{"app": render.GeneratorsName, indexLabel: strconv.Itoa(index)}},
		Spec:   corev1.PodSpec{NodeName: "node-" + strconv.Itoa(index)},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if ready {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	return p
}

// TestWaitReady: every index's newest pod must be ready: a replaced pod's
// older one does not count, and one list serves every index.
func TestWaitReady(t *testing.T) {
	c := fake.NewClientset(
		pod("g-0-a", 0, t0, true),
		pod("g-1-old", 1, t0, true), pod("g-1-new", 1, t0.Add(time.Minute), true),
		pod("other", 2, t0, true),
	)
	c.CoreV1().Pods("ns").Create(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "not-a-generator", Namespace: "ns"}}, metav1.CreateOptions{})
	s := &Source{cfg: Config{Client: c, Namespace: "ns", Job: render.Generators{Count: 2}, ReadyTimeout: time.Second}}
	ready, err := s.waitReady(context.Background())
	if err != nil || len(ready) != 2 || ready[0].Name != "g-0-a" || ready[1].Name != "g-1-new" {
		t.Fatalf("ready %v (%v); want g-0-a and the newer g-1-new", ready, err)
	}
	lists := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == "list" {
			lists++
		}
	}
	if lists != 1 {
		t.Errorf("%d lists for 2 generators all ready at once; want 1", lists)
	}

	c = fake.NewClientset(pod("g-0-a", 0, t0, true), pod("g-1-a", 1, t0, false))
	s = &Source{cfg: Config{Client: c, Namespace: "ns", Job: render.Generators{Count: 2}, ReadyTimeout: 1200 * time.Millisecond}}
	if _, err := s.waitReady(context.Background()); err == nil || !strings.Contains(err.Error(), "not all ready") {
		t.Errorf("an index never ready: %v; want an error saying so", err)
	}
}

// TestStats: the generators' account is what droprun read, record by
// record; each generator's gaps, missing results and complaints make it
// suspect, named by generator.
func TestStats(t *testing.T) {
	line := func(code int, errText string) string {
		return fmt.Sprintf(`{"attack":"v","seq":0,"code":%d,"timestamp":"2026-12-05T10:00:00Z","latency":1000000,"bytes_out":0,"bytes_in":0,"error":%q,"body":null,"method":"GET","url":"http://web/version","headers":null}`+"\n", code, errText)
	}
	clean := generators.NewStream(OriginOf(0), &bytes.Buffer{}, nil)
	if err := clean.Consume(strings.NewReader(line(200, "") + line(200, "") + `{"droprun-end":{"results":2,"cpu":0.1}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	lossy := generators.NewStream(OriginOf(1), &bytes.Buffer{}, nil)
	if err := lossy.Consume(strings.NewReader(line(0, "dial tcp 10.96.0.1:80: connect: connection refused") + `{"droprun-end":{"results":3,"suspect":["lagged", "` + traffic.LagSuspect + ` 1.2s behind schedule (tolerance 250ms)"]}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	s := &Source{cfg: Config{Rate: 30}, start: t0, gens: []*Generator{{Index: 0, Stream: clean}, {Index: 1, Stream: lossy}}}
	st := s.stats(t0.Add(10 * time.Second))
	if st.Requests != 3 || st.ByClass[traffic.Class2xx] != 2 || st.ByClass[traffic.ClassRefused] != 1 || st.AchievedRate != 0.3 || st.AskedRate != 30 {
		t.Errorf("stats %+v; want 3 requests (2 2xx, 1 refused), 0.3/s of 30", st)
	}
	// Its lag is left to its stalls (generator.stall), request by request.
	want := []string{"generator 1: lagged", "generator 1: its totals count 2 results droprun never read of its log"}
	if strings.Join(st.Suspect, "|") != strings.Join(want, "|") {
		t.Errorf("suspect %q; want %q", st.Suspect, want)
	}
}

// TestStopAlreadyEnded: Stop through a fake API server. A generator that
// answers is clocked again and stopped; one whose pod has ended (its index
// failed for good) cannot be stopped and is not an error, only said; one
// whose pod still runs but does not answer the stop is an error naming it.
func TestStopAlreadyEnded(t *testing.T) {
	for _, tc := range []struct {
		phase corev1.PodPhase
		want  string // in the error; "" for none
	}{
		{corev1.PodFailed, ""},
		{corev1.PodRunning, "stopping generator 0 (pod g-0-a)"},
	} {
		var mu sync.Mutex
		stops := map[string]int{}
		api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.URL.Path == "/api/v1/namespaces/ns/pods":
				gone := pod("g-0-a", 0, t0, false)
				gone.Status.Phase = tc.phase
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode(&corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: []corev1.Pod{*gone}})
			case strings.HasPrefix(r.URL.Path, "/api/v1/namespaces/ns/pods/g-0-a:"):
				http.Error(w, "no endpoints available", http.StatusServiceUnavailable)
			case r.URL.Path == "/api/v1/namespaces/ns/pods/g-1-b:9000/proxy/clock":
				fmt.Fprintln(w, time.Now().UnixNano())
			case r.URL.Path == "/api/v1/namespaces/ns/pods/g-1-b:9000/proxy/stop" && r.Method == http.MethodPost:
				mu.Lock()
				stops["g-1-b"]++
				mu.Unlock()
				fmt.Fprintln(w, "stopping")
			default:
				http.NotFound(w, r)
			}
		}))
		c, err := kubernetes.NewForConfig(&rest.Config{Host: api.URL})
		if err != nil {
			t.Fatal(err)
		}
		var log bytes.Buffer
		s := &Source{cfg: Config{Client: c, Namespace: "ns", Log: &log}, stopped: make(chan struct{}), cancel: func() {},
			gens: []*Generator{
				{Index: 0, Pod: "g-0-a", Stream: generators.NewStream(OriginOf(0), io.Discard, nil)},
				{Index: 1, Pod: "g-1-b", Stream: generators.NewStream(OriginOf(1), io.Discard, nil)},
			}}
		_, err = s.Stop()
		api.Close()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("pod %s: Stop: %v; want no error for an ended generator", tc.phase, err)
		case tc.want == "" && !strings.Contains(log.String(), "generator 0: already ended, not stopped"):
			t.Errorf("pod %s: log %q; want it to say generator 0 had ended", tc.phase, log.String())
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("pod %s: Stop: %v; want an error saying %q", tc.phase, err, tc.want)
		}
		if stops["g-1-b"] != 1 || s.gens[1].End.Bound <= 0 || s.gens[0].End.Bound != 0 {
			t.Errorf("pod %s: %d stops to g-1-b, end clocks %+v and %+v; want one stop and a clock for g-1-b alone", tc.phase, stops["g-1-b"], s.gens[0].End, s.gens[1].End)
		}
	}
}
