package runfile

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/droprun/droprun/harness/atomicfile"
)

// A run's raw files (results, events, failures, the pods' and a front's
// records) can be kept packed: gzip'd, as name+Packed in place of name,
// about a tenth of their size (results/examples ships its runs so).
// OpenRaw reads either form; Pack makes the packed one.
const (
	// Packed is the suffix of a packed raw file.
	Packed = ".gz"
)

// maxUnpacked bounds what one packed file may unpack to: a run's largest
// raw file is a few hundred MiB. A variable for its test.
var maxUnpacked int64 = 4 << 30

// OpenRaw opens name in dir as Open does or, when name is missing, its
// packed form (name+Packed), unpacked as it is read. A packed file that
// unpacks to more than 4 GiB is cut there with an error.
func OpenRaw(dir, name string) (io.ReadCloser, error) {
	f, err := Open(dir, name)
	if err == nil {
		return f, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	u, perr := openPacked(dir, name)
	if errors.Is(perr, os.ErrNotExist) {
		return nil, err // name's own error: neither form is there
	}
	if perr != nil {
		return nil, perr
	}
	return u, nil
}

// openPacked opens name's packed form, unpacked as it is read.
func openPacked(dir, name string) (*unpacked, error) {
	pf, err := Open(dir, name+Packed)
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(pf)
	if err != nil {
		pf.Close()
		return nil, fmt.Errorf("%s: not a packed raw file: %w", filepath.Join(dir, name+Packed), err)
	}
	return &unpacked{zr: zr, f: pf, path: filepath.Join(dir, name+Packed), left: maxUnpacked}, nil
}

// unpacked reads a packed file, up to maxUnpacked.
type unpacked struct {
	zr   *gzip.Reader
	f    *os.File
	path string
	left int64
}

func (u *unpacked) Read(p []byte) (int, error) {
	if u.left <= 0 {
		return 0, fmt.Errorf("%s unpacks to more than %d MiB, more than droprun writes: not read further", u.path, maxUnpacked>>20)
	}
	if int64(len(p)) > u.left {
		p = p[:u.left]
	}
	n, err := u.zr.Read(p)
	u.left -= int64(n)
	return n, err
}

func (u *unpacked) Close() error {
	zerr := u.zr.Close()
	if err := u.f.Close(); err != nil {
		return err
	}
	return zerr
}

// Exists says whether name, or its packed form, is in dir, whatever it
// is: Open and OpenRaw say whether it can be read (a link or a FIFO in
// its place is then an error naming it, not a file taken as missing).
func Exists(dir, name string) bool {
	for _, n := range []string{name, name + Packed} {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			return true
		}
	}
	return false
}

// Pack replaces each of names in dir by its packed form: written beside
// it atomically, read back and compared with the original, and only then
// the original removed. A name already packed is left as it is. It
// returns the bytes before and after.
func Pack(dir string, names []string) (before, after int64, err error) {
	for _, name := range names {
		f, err := Open(dir, name)
		if errors.Is(err, os.ErrNotExist) && Exists(dir, name) {
			continue // packed already
		}
		if err != nil {
			return before, after, err
		}
		plain := sha256.New()
		packed := filepath.Join(dir, name+Packed)
		werr := atomicfile.WriteFunc(packed, 0o644, func(w io.Writer) error {
			zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
			if err != nil {
				return err
			}
			if _, err := io.Copy(io.MultiWriter(zw, plain), f); err != nil {
				return err
			}
			return zw.Close()
		})
		f.Close()
		if werr != nil {
			return before, after, fmt.Errorf("packing %s: %w", filepath.Join(dir, name), werr)
		}
		if err := samePacked(dir, name, plain.Sum(nil)); err != nil {
			os.Remove(packed)
			return before, after, err
		}
		b, a := fileSize(filepath.Join(dir, name)), fileSize(packed)
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			return before, after, err
		}
		before, after = before+b, after+a
	}
	return before, after, nil
}

// samePacked reads name's packed form back and checks it unpacks to the
// original's digest.
func samePacked(dir, name string, want []byte) error {
	u, err := openPacked(dir, name)
	if err != nil {
		return err
	}
	defer u.Close()
	h := sha256.New()
	if _, err := io.Copy(h, u); err != nil {
		return fmt.Errorf("reading back %s: %w", filepath.Join(dir, name+Packed), err)
	}
	if !bytes.Equal(h.Sum(nil), want) {
		return fmt.Errorf("%s does not unpack to %s: not packed", filepath.Join(dir, name+Packed), name)
	}
	return nil
}

func fileSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return fi.Size()
}
