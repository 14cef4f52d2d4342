package runfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOpen: a run's own file opens, through a link inside the folder too;
// a FIFO, a device, a folder, a link out of the folder and a missing file
// are each refused at once, with the file named (a FIFO is refused without
// waiting for a writer), and a missing file is fs.ErrNotExist.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret")
	must(t, os.WriteFile(filepath.Join(dir, "summary.json"), []byte(`{}`), 0o644))
	must(t, os.WriteFile(outside, []byte("s"), 0o644))
	must(t, os.Symlink("summary.json", filepath.Join(dir, "inside.json")))
	must(t, os.Symlink(outside, filepath.Join(dir, "out.json")))
	must(t, os.Symlink("/dev/zero", filepath.Join(dir, "zero.json")))
	must(t, syscall.Mkfifo(filepath.Join(dir, "fifo.json"), 0o644))
	must(t, os.Mkdir(filepath.Join(dir, "folder.json"), 0o755))
	for _, ok := range []string{"summary.json", "inside.json"} {
		if b, err := Read(dir, ok, 0); err != nil || string(b) != "{}" {
			t.Errorf("%s: %q, %v", ok, b, err)
		}
	}
	for name, want := range map[string]string{
		"out.json":    "leads out of",
		"zero.json":   "leads out of", // an absolute link leaves the folder before it is a device
		"fifo.json":   "is not a regular file (a FIFO)",
		"folder.json": "is not a regular file (a folder)",
	} {
		_, err := Open(dir, name)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), filepath.Join(dir, name)) {
			t.Errorf("%s: %v, want an error naming it and saying %q", name, err, want)
		}
	}
	if _, err := Open(dir, "gone.json"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
	// A device inside the folder (its node, not a link) is refused too.
	if err := syscall.Mknod(filepath.Join(dir, "null.json"), syscall.S_IFCHR|0o644, 1<<8|3); err == nil {
		if _, err := Open(dir, "null.json"); err == nil || !strings.Contains(err.Error(), "(a device)") {
			t.Errorf("a device node: %v, want refused", err)
		}
	}
}

// TestReadLimit: a file over the limit is refused, never read whole.
func TestReadLimit(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "big"), make([]byte, 1025), 0o644))
	if _, err := Read(dir, "big", 1024); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("1,025 bytes under a 1,024 limit: %v", err)
	}
	if b, err := Read(dir, "big", 2048); err != nil || len(b) != 1025 {
		t.Errorf("under the limit: %d bytes, %v", len(b), err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
