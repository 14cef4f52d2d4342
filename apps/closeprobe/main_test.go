package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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

// TestWatchErrorsInARow: a connect that fails otherwise than refused or
// timed out (here no local port free) ends the watch only when
// errorsToClose fail in a row, and the close is placed at the end of the
// first of them; a success between errors starts the count again.
func TestWatchErrorsInARow(t *testing.T) {
	// open, open, error, error, open, then errors only.
	var (
		n      int
		opened time.Time // the last successful connect's start
		first  time.Time // the end of the first error of the last run
	)
	fake := func(context.Context, string) (net.Conn, error) {
		n++
		switch {
		case n <= 2 || n == 5:
			opened = time.Now()
			c1, c2 := net.Pipe()
			c2.Close()
			return c1, nil
		case n == 6:
			defer func() { first = time.Now() }()
		}
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.EADDRNOTAVAIL)}
	}
	got := watch(context.Background(), "10.0.0.1:8080", fake)
	f := strings.Fields(got)
	if len(f) != 3 || f[2] != "error" || n != 5+errorsToClose {
		t.Fatalf("watch said %q after %d connects: want an error close after %d", got, n, 5+errorsToClose)
	}
	open, err1 := strconv.ParseInt(f[0], 10, 64)
	failed, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("watch said %q", got)
	}
	// The open time is the start of the 5th connect, taken just before
	// it; the close the end of the 6th, taken just after it returned:
	// not the 8th's, two connects later.
	if o := time.Unix(0, open); o.After(opened) || opened.Sub(o) > every {
		t.Errorf("last open at %s, want the 5th connect's start, %s", o.Format("05.000000"), opened.Format("05.000000"))
	}
	if c := time.Unix(0, failed); c.Before(first) || c.Sub(first) > every {
		t.Errorf("closed at %s, want the end of the first of the last errors, %s", c.Format("05.000000"), first.Format("05.000000"))
	}
}
