package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPace: reads are slow until a watch begins, which wakes them at once;
// fast while it lasts and for pollLinger after it ends; slow again after.
func TestPace(t *testing.T) {
	now := time.Unix(1000, 0)
	p := newPace()
	p.now = func() time.Time { return now }
	if every, _ := p.next(); every != pollIdle {
		t.Fatalf("no watch yet: every %s, want %s", every, pollIdle)
	}
	_, wake := p.next()
	p.watching(+1)
	select {
	case <-wake:
	default:
		t.Fatal("a watch beginning did not wake the polls")
	}
	now = now.Add(time.Minute) // a long watch: still fast
	if every, _ := p.next(); every != pollEvery {
		t.Errorf("while a watch lasts: every %s, want %s", every, pollEvery)
	}
	p.watching(-1)
	now = now.Add(pollLinger - time.Millisecond)
	if every, _ := p.next(); every != pollEvery {
		t.Errorf("just within the linger after the watch: every %s, want %s", every, pollEvery)
	}
	now = now.Add(2 * time.Millisecond)
	if every, _ := p.next(); every != pollIdle {
		t.Errorf("after the linger: every %s, want %s", every, pollIdle)
	}
	_, wake = p.next()
	p.watching(+1)
	p.watching(-1) // an ending wakes nothing; a beginning did
	select {
	case <-wake:
	default:
		t.Error("the second watch did not wake the polls")
	}
}

// TestFollow: every whole line of a followed file is given once, in order:
// those there at the start, those appended (a line written in two parts
// given once whole), those of the old file after the kubelet rotates it
// and of the new file after, and those written just before the follow
// ends; a line over maxLogLine is left out and counted.
func TestFollow(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	write := func(f *os.File, s string) {
		t.Helper()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	write(f, "a\nb\n")
	got := make(chan string, 100)
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		skipped int
		err     error
	}
	done := make(chan result, 1)
	go func() {
		n, err := follow(ctx, path, time.Millisecond, func(lines [][]byte) {
			for _, l := range lines {
				got <- string(l)
			}
		})
		done <- result{n, err}
	}()
	var all []string
	await := func(want ...string) {
		t.Helper()
		for _, w := range want {
			select {
			case l := <-got:
				if len(l) > 40 {
					l = l[:40] + "…"
				}
				all = append(all, l)
				if l != w {
					t.Fatalf("lines so far %q: want %q last", all, w)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("lines so far %q: %q never came", all, w)
			}
		}
	}
	await("a", "b")
	write(f, "c-first-")
	write(f, "half\n"+strings.Repeat("x", maxLogLine+1)+"\nd\n")
	await("c-first-half", "d")
	// The kubelet's rotation: the file renamed, a line more written to it
	// before the runtime opens a new file at the path.
	if err := os.Rename(path, path+".20261207"); err != nil {
		t.Fatal(err)
	}
	write(f, "e\n")
	f.Close()
	f, err = os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	write(f, "f\n")
	await("e", "f")
	write(f, "g\n")
	cancel()
	await("g")
	r := <-done
	if r.err != nil || r.skipped != 1 {
		t.Errorf("follow ended with %d skipped, %v; want 1, nil", r.skipped, r.err)
	}
	select {
	case l := <-got:
		t.Errorf("a line given twice or after the end: %.40q", l)
	default:
	}
}
