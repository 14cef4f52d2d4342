package runfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// MaxWhole bounds a file read whole (run.json, summary.json,
// scenario.yaml): they are kilobytes; a results or events file is
// streamed, never read whole.
const MaxWhole = 64 << 20

// Open opens name (a path relative to dir, which may name a subfolder)
// for reading. It refuses, with an error naming the file, anything but a
// regular file, and a link that leads out of dir. A missing file's error
// wraps fs.ErrNotExist.
func Open(dir, name string) (*os.File, error) {
	path := filepath.Join(dir, name)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	// O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
	// writer; on a regular file it changes nothing.
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, os.ErrPermission) && pe.Err.Error() == "path escapes from parent" {
			return nil, fmt.Errorf("%s leads out of %s (a link): droprun reads a run's files inside its directory only", path, dir)
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file (%s): droprun reads a run's files only, never a pipe, device or folder in their place", path, kind(fi.Mode()))
	}
	return f, nil
}

// Read reads name in dir whole (through Open), refusing more than limit
// bytes (MaxWhole when limit <= 0).
func Read(dir, name string, limit int64) ([]byte, error) {
	if limit <= 0 {
		limit = MaxWhole
	}
	f, err := Open(dir, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, name), err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d MiB, more than droprun writes there: not read", filepath.Join(dir, name), limit>>20)
	}
	return b, nil
}

func kind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeDevice != 0, m&os.ModeCharDevice != 0:
		return "a device"
	case m.IsDir():
		return "a folder"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return m.Type().String()
}
