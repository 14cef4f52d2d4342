package scenario

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// MaxFileSize is the most droprun reads from a file a user names: a
// scenario, a Deployment manifest, a kubeconfig. Each is a few KiB; the cap
// keeps a wrong path (a device, a log, an archive) from filling memory.
const MaxFileSize = 1 << 20

// ReadFile reads the whole of path, refusing more than MaxFileSize bytes.
// what names the file's role ("scenario", "kubeconfig") in the error.
func ReadFile(path, what string) ([]byte, error) {
	return readCapped(path, what, MaxFileSize)
}

// readFrom is ReadFile from files, or from the OS file system when files
// is nil.
func readFrom(files fs.FS, path, what string) ([]byte, error) {
	if files == nil {
		return ReadFile(path, what)
	}
	f, err := files.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAllCapped(f, path, what, MaxFileSize)
}

// readCapped reads at most limit bytes of path. It reads limit+1 through a
// LimitReader, so the cap holds for any file, a device or pipe included,
// whatever its size claims to be.
func readCapped(path, what string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAllCapped(f, path, what, limit)
}

func readAllCapped(r io.Reader, path, what string, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s %s: %w", what, path, err)
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Path: path, What: what, Limit: limit}
	}
	return data, nil
}

// TooLargeError is a file over the size droprun reads.
type TooLargeError struct {
	Path  string
	What  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return e.Path + " " + e.msg() + ": " + e.fix()
}

func (e *TooLargeError) msg() string {
	return fmt.Sprintf("is larger than %s, the most droprun reads from a %s", size(e.Limit), e.What)
}

func (e *TooLargeError) fix() string {
	return fmt.Sprintf("check the path: a %s is a few KiB, so this is some other file (a device, a log, an archive)", e.What)
}

func size(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// asTooLarge returns the TooLargeError inside err, if any.
func asTooLarge(err error) (*TooLargeError, bool) {
	var e *TooLargeError
	ok := errors.As(err, &e)
	return e, ok
}

// expandHome turns ~ and ~/rest into the user's home directory, as a shell
// would: a folder named "~" beside the scenario is never what was meant.
// ~name (another user's home) is refused rather than guessed at.
func expandHome(p string) (string, error) {
	if !strings.HasPrefix(p, "~") {
		return p, nil
	}
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return "", fmt.Errorf("%q names another user's home directory, which droprun does not look up", p)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("%q starts with ~ but the home directory is unknown: %v", p, err)
	}
	return filepath.Join(home, p[1:]), nil
}
