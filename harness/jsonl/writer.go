package jsonl

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
)

// FlushEvery bounds how stale a Writer's file is on disk: a crash loses at
// most this much of the stream.
const FlushEvery = time.Second

// Writer appends JSON values as lines to an io.Writer. Its methods are
// safe for concurrent use.
type Writer struct {
	name string // for errors: the file's name

	mu     sync.Mutex
	w      *bufio.Writer
	err    error // the first error, sticky
	closed bool
	done   chan struct{}
	wg     sync.WaitGroup
}

// NewWriter returns a Writer on out that flushes every FlushEvery until
// Close. name appears in errors (e.g. "events.jsonl").
func NewWriter(out io.Writer, name string) *Writer {
	w := &Writer{name: name, w: bufio.NewWriter(out), done: make(chan struct{})}
	w.wg.Go(w.flushLoop)
	return w
}

// Write encodes v as one line. After the first error it does nothing; the
// error is returned by Err and Close.
func (w *Writer) Write(v any) {
	b, err := json.Marshal(v)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil || w.closed {
		return
	}
	if err != nil {
		w.err = fmt.Errorf("%s: encoding a record: %w", w.name, err)
		return
	}
	if _, err := w.w.Write(append(b, '\n')); err != nil {
		w.err = fmt.Errorf("%s: %w", w.name, err)
	}
}

// Flush hands the buffered lines to the underlying writer now.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
	return w.err
}

func (w *Writer) flushLocked() {
	if w.err != nil {
		return
	}
	if err := w.w.Flush(); err != nil {
		w.err = fmt.Errorf("%s: %w", w.name, err)
	}
}

// Err returns the first error so far.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close flushes and stops the periodic flush; later Writes are dropped. It
// does not close the underlying writer. It returns the first error.
func (w *Writer) Close() error {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.done)
	}
	w.mu.Unlock()
	w.wg.Wait()
	return w.Flush()
}

func (w *Writer) flushLoop() {
	t := time.NewTicker(FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-w.done:
			return
		case <-t.C:
			w.mu.Lock()
			w.flushLocked()
			w.mu.Unlock()
		}
	}
}
