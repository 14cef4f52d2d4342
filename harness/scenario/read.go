package scenario

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/droprun/droprun/harness/runfile"
)

// readFrom is runfile.ReadUser from files, or from the OS file system when files
// is nil.
func readFrom(files fs.FS, path, what string) ([]byte, error) {
	if files == nil {
		return runfile.ReadUser(path, what)
	}
	f, err := files.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return runfile.ReadAllCapped(f, path, what, runfile.MaxUserFile)
}

// asTooLarge returns the runfile.TooLargeError inside err, if any.
func asTooLarge(err error) (*runfile.TooLargeError, bool) {
	var e *runfile.TooLargeError
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
