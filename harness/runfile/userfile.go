package runfile

import (
	"fmt"
	"io"
	"os"
)

// MaxUserFile is the most droprun reads from a file a user names: a
// scenario, a Deployment manifest, a kubeconfig. Each is a few KiB; the
// cap keeps a wrong path (a device, a log, an archive) from filling
// memory.
const MaxUserFile = 1 << 20

// ReadUser reads the whole of path, a file a user named, refusing more
// than MaxUserFile bytes (a TooLargeError). what names the file's role
// ("scenario", "kubeconfig") in the error.
func ReadUser(path, what string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAllCapped(f, path, what, MaxUserFile)
}

// ReadAllCapped reads r, the file path of role what, to its end or to
// limit bytes, whichever comes first. It reads limit+1 through a
// LimitReader, so the cap holds for any file, a device or pipe included,
// whatever its size claims to be.
func ReadAllCapped(r io.Reader, path, what string, limit int64) ([]byte, error) {
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
	return e.Path + " " + e.Msg() + ": " + e.Fix()
}

// Msg says what is wrong with the file, without its path.
func (e *TooLargeError) Msg() string {
	return fmt.Sprintf("is larger than %s, the most droprun reads from a %s", size(e.Limit), e.What)
}

// Fix says what to do about it.
func (e *TooLargeError) Fix() string {
	return fmt.Sprintf("check the path: a %s is a few KiB, so this is some other file (a device, a log, an archive)", e.What)
}

func size(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
