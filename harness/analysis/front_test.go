package analysis

import "testing"

// TestIDSet: droprun's IDs (prefix-N, N in base 36) are kept as bits of
// their prefix's set, any other ID whole; an N past the bound is kept
// whole too, so a stray line cannot allocate without bound.
func TestIDSet(t *testing.T) {
	var s idSet
	in := []string{"no-prestop-1", "no-prestop-zz", "graceful-drain-1", "odd", "x-zzzzzzzzzzzz", "a-b-3"}
	for _, id := range in {
		s.add(id)
	}
	for _, id := range in {
		if !s.has(id) {
			t.Errorf("%q added, not in the set", id)
		}
	}
	for _, id := range []string{"no-prestop-2", "graceful-drain-zz", "no-prestop", "a-b-4", "other-1", ""} {
		if s.has(id) {
			t.Errorf("%q in the set, never added", id)
		}
	}
	if n := len(s.bits["no-prestop"]); n*64 > 2*36*36 {
		t.Errorf("no-prestop's bitset has %d words for Ns up to %d", n, 36*36-1)
	}
	if !s.other["x-zzzzzzzzzzzz"] || len(s.other) != 2 {
		t.Errorf("kept whole: %v, want odd and the N past the bound", s.other)
	}
}
