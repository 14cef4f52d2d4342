package runfile

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestPack: Pack replaces each file by its packed form, which OpenRaw
// reads back byte for byte under the plain name; a file packed already
// is left alone; Exists sees either form; a missing file is
// fs.ErrNotExist in either form, and a packed file that is not gzip is an
// error naming it.
func TestPack(t *testing.T) {
	dir := t.TempDir()
	events := bytes.Repeat([]byte(`{"kind":"route.removed","node":"droprun-worker"}`+"\n"), 2000)
	must(t, os.WriteFile(filepath.Join(dir, "events.jsonl"), events, 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "run.json"), []byte(`{}`), 0o644))
	before, after, err := Pack(dir, []string{"events.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	if before != int64(len(events)) || after <= 0 || after*10 > before {
		t.Errorf("packed %d bytes into %d: want a tenth or less of a repetitive file", before, after)
	}
	if _, err := os.Stat(filepath.Join(dir, "events.jsonl")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the original is still there after packing: %v", err)
	}
	if !Exists(dir, "events.jsonl") || !Exists(dir, "run.json") || Exists(dir, "gone.jsonl") {
		t.Error("Exists: want events.jsonl (packed) and run.json (plain), not gone.jsonl")
	}
	for _, name := range []string{"events.jsonl", "run.json"} {
		r, err := OpenRaw(dir, name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		want := events
		if name == "run.json" {
			want = []byte(`{}`)
		}
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s read back: %d bytes, %v; want the %d written", name, len(got), err, len(want))
		}
	}
	if b, a, err := Pack(dir, []string{"events.jsonl"}); err != nil || b != 0 || a != 0 {
		t.Errorf("packing a packed file again: %d → %d, %v; want nothing done", b, a, err)
	}
	if _, err := OpenRaw(dir, "gone.jsonl"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
	// A FIFO in a raw file's place is there, and refused by name when
	// read, never taken as missing.
	must(t, syscall.Mkfifo(filepath.Join(dir, "fifo.jsonl"), 0o644))
	if _, err := OpenRaw(dir, "fifo.jsonl"); !Exists(dir, "fifo.jsonl") || err == nil || !strings.Contains(err.Error(), "is not a regular file (a FIFO)") {
		t.Errorf("a FIFO: exists %v, read %v; want it there and refused", Exists(dir, "fifo.jsonl"), err)
	}
	must(t, os.WriteFile(filepath.Join(dir, "bad.jsonl.gz"), []byte("not gzip"), 0o644))
	if _, err := OpenRaw(dir, "bad.jsonl"); err == nil || !strings.Contains(err.Error(), "bad.jsonl.gz: not a packed raw file") {
		t.Errorf("a packed file that is not gzip: %v", err)
	}
}

// TestOpenRawBounded: a packed file that unpacks past the bound is cut
// there with an error naming it (kilobytes of zeros unpack to MiBs; the
// bound is lowered to 2 MiB for the test).
func TestOpenRawBounded(t *testing.T) {
	defer func(old int64) { maxUnpacked = old }(maxUnpacked)
	maxUnpacked = 2 << 20
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "events.jsonl.gz"))
	must(t, err)
	zw, err := gzip.NewWriterLevel(f, gzip.BestSpeed)
	must(t, err)
	zero := make([]byte, 1<<20)
	for range 3 {
		_, err := zw.Write(zero)
		must(t, err)
	}
	must(t, zw.Close())
	must(t, f.Close())
	r, err := OpenRaw(dir, "events.jsonl")
	must(t, err)
	defer r.Close()
	n, err := io.Copy(io.Discard, r)
	if err == nil || n != maxUnpacked || !strings.Contains(err.Error(), "events.jsonl.gz unpacks to more than 2 MiB") {
		t.Errorf("read %d bytes, %v; want %d and an error naming the file", n, err, maxUnpacked)
	}
}
