package main

import (
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
