package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MaxLine is the longest line Read accepts.
const MaxLine = 16 << 20

// Truncated is the warning Read returns for a last line that a crash cut
// off: every record before it was delivered.
type Truncated struct {
	Name string // the file
	Line int    // the cut-off line's number
}

func (t *Truncated) Error() string {
	return fmt.Sprintf("%s: line %d was cut off (the run was killed while writing it?): read up to the last whole record", t.Name, t.Line)
}

// Read decodes every line of r as a T and calls fn with it, in order;
// blank lines are skipped. A last line without its newline that does not
// decode returns a *Truncated (check with errors.As) after every whole
// record was delivered. Any other bad line is an error that names the file
// and the line. An error from fn stops the reading and is returned as is.
func Read[T any](r io.Reader, name string, fn func(T) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for line := 1; ; line++ {
		b, err := readLine(br)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("%s: line %d: %w", name, line, err)
		}
		complete := len(b) > 0 && b[len(b)-1] == '\n'
		if t := bytes.TrimSpace(b); len(t) > 0 {
			var v T
			if derr := json.Unmarshal(t, &v); derr != nil {
				if !complete && errors.Is(err, io.EOF) {
					return &Truncated{Name: name, Line: line}
				}
				return fmt.Errorf("%s: line %d: %w", name, line, derr)
			}
			if ferr := fn(v); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
	}
}

// readLine returns the next line with its newline (without one at the end
// of the input, with io.EOF), refusing lines over MaxLine.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxLine {
			return nil, fmt.Errorf("line longer than %d bytes: not a droprun file", MaxLine)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, err
	}
}

// ReadAll returns every whole record of r; see Read for the warning.
func ReadAll[T any](r io.Reader, name string) ([]T, error) {
	var out []T
	err := Read(r, name, func(v T) error { out = append(out, v); return nil })
	return out, err
}
