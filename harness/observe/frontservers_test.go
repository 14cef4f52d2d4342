package observe

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/droprun/droprun/harness/closeprobe"
	"github.com/droprun/droprun/harness/timeline"
)

// fakePoller hands each Poll's url and callback to the test.
type fakePoller struct {
	polls   chan string
	mu      sync.Mutex
	on      map[string]func(closeprobe.Reading)
	unpolls chan string
}

func (f *fakePoller) Poll(id, url string, on func(closeprobe.Reading)) {
	f.mu.Lock()
	f.on[id] = on
	f.mu.Unlock()
	f.polls <- id + " " + url
}

func (f *fakePoller) Unpoll(id string) {
	select {
	case f.unpolls <- id:
	default:
	}
}

func (f *fakePoller) read(id string, r closeprobe.Reading) {
	f.mu.Lock()
	on := f.on[id]
	f.mu.Unlock()
	on(r)
}

// TestFrontServersPolled: a running front pod is polled at its IP; its
// readings become front.watching, then front.removed at the first reading
// without a server (last_seen the start of the last read with it) and
// front.added, one front.poll_error per run of failing reads; a deleted
// front pod is unpolled, and nothing is recorded after stop.
func TestFrontServersPolled(t *testing.T) {
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "traefik-1", Namespace: "droprun", Labels: map[string]string{"app": "traefik"}},
		Spec:       corev1.PodSpec{NodeName: "n1"},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.9"},
	}
	client := fake.NewClientset(pod)
	var mu sync.Mutex
	var events []timeline.Event
	rec := func(e timeline.Event) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}
	api := FrontAPI{Port: 9000, Path: "/api/http/services", Servers: func(b []byte) ([]string, error) { return strings.Fields(string(b)), nil }}
	fp := &fakePoller{polls: make(chan string, 4), on: map[string]func(closeprobe.Reading){}, unpolls: make(chan string, 4)}
	stop, err := StartFrontServers(ctx, client, "droprun", "app=traefik", api, fp, rec)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-fp.polls:
		if got != "traefik-1 http://10.0.0.9:9000/api/http/services" {
			t.Fatalf("polled %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the running front pod was not polled")
	}
	t0 := time.Unix(100, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	fp.read("traefik-1", closeprobe.Reading{At: at(0), Body: []byte("10.1.0.1 10.1.0.2")})
	fp.read("traefik-1", closeprobe.Reading{Before: at(980), At: at(1003), Body: []byte("10.1.0.1")})
	fp.read("traefik-1", closeprobe.Reading{At: at(1100), Err: "connection refused"})
	fp.read("traefik-1", closeprobe.Reading{At: at(1120), Err: "connection refused"})
	fp.read("traefik-1", closeprobe.Reading{Before: at(1040), At: at(1200), Body: []byte("10.1.0.1 10.1.0.3")})

	if err := client.CoreV1().Pods("droprun").Delete(ctx, "traefik-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-fp.unpolls:
		if id != "traefik-1" {
			t.Errorf("unpolled %q", id)
		}
	case <-time.After(10 * time.Second):
		t.Error("the deleted front pod was not unpolled")
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	fp.read("traefik-1", closeprobe.Reading{Before: at(1200), At: at(1300), Body: []byte("")})

	mu.Lock()
	defer mu.Unlock()
	var got []string
	for _, e := range events {
		if e.Pod != "traefik-1" || e.Node != "n1" {
			t.Errorf("event %+v: want pod traefik-1 on n1", e)
		}
		at, _ := e.FrontChange()
		got = append(got, strings.Join([]string{string(e.Kind), e.IP, at.Sub(t0).String(), e.Detail["last_seen"], e.Detail["servers"], e.Detail["error"], e.Detail["via"]}, "|"))
	}
	want := []string{
		"front.watching||0s||10.1.0.1 10.1.0.2||prober",
		"front.removed|10.1.0.2|1.003s|" + at(980).Format(time.RFC3339Nano) + "|||",
		"front.poll_error||1.1s|||connection refused|",
		"front.added|10.1.0.3|1.2s||||",
	}
	if !slices.Equal(got, want) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
