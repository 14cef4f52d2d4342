package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sub", "summary.json")
	if err := WriteJSON(p, map[string]int{"n": 7}); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("second\n")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if string(b) != "second\n" {
		t.Fatalf("content %q", b)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", fi.Mode())
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Fatalf("left behind: %v", entries)
	}
}

// TestFailedWriteKeepsTheOldFile: a fill that fails leaves the file as it
// was and no temporary file behind.
func TestFailedWriteKeepsTheOldFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := Write(p, []byte("old")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := WriteFunc(p, 0o600, func(w io.Writer) error {
		w.Write([]byte("half"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	b, _ := os.ReadFile(p)
	entries, _ := os.ReadDir(dir)
	if string(b) != "old" || len(entries) != 1 {
		t.Errorf("content %q, %d entries", b, len(entries))
	}
}

// TestWriteFuncPerm: a rewrite takes the new mode, not the old file's.
func TestWriteFuncPerm(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a", "b.txt")
	if err := Write(p, []byte("one")); err != nil {
		t.Fatal(err)
	}
	err := WriteFunc(p, 0o600, func(w io.Writer) error {
		_, err := w.Write([]byte("two"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	fi, _ := os.Stat(p)
	if string(b) != "two" || fi.Mode().Perm() != 0o600 {
		t.Errorf("content %q mode %v", b, fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}
