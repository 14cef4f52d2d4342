package jsonl

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

type rec struct {
	N int    `json:"n"`
	S string `json:"s,omitempty"`
}

func TestWriteRead(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, "x.jsonl")
	for i := range 3 {
		w.Write(rec{N: i})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w.Write(rec{N: 9}) // after Close: dropped
	got, err := ReadAll[rec](&buf, "x.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[2].N != 2 {
		t.Fatalf("got %+v, want 3 records 0..2", got)
	}
}

type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriterStickyError(t *testing.T) {
	w := NewWriter(failing{}, "x.jsonl")
	w.Write(rec{S: strings.Repeat("a", 8000)}) // larger than the buffer: written through
	w.Write(rec{N: 1})
	err := w.Close()
	if err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), "x.jsonl") {
		t.Fatalf("Close = %v, want the first write error naming the file", err)
	}
}

func TestReadCutOffLastLine(t *testing.T) {
	in := `{"n":1}` + "\n\n" + `{"n":2}` + "\n" + `{"n":3,"s":"ab`
	var got []int
	err := Read(strings.NewReader(in), "e.jsonl", func(r rec) error { got = append(got, r.N); return nil })
	var tr *Truncated
	if !errors.As(err, &tr) || tr.Line != 4 {
		t.Fatalf("err = %v, want a *Truncated at line 4", err)
	}
	if len(got) != 2 {
		t.Fatalf("got %v, want the two whole records", got)
	}
}

func TestReadBadLineInTheMiddle(t *testing.T) {
	in := `{"n":1}` + "\n" + `{"n":` + "\n" + `{"n":3}` + "\n"
	err := Read(strings.NewReader(in), "e.jsonl", func(rec) error { return nil })
	var tr *Truncated
	if err == nil || errors.As(err, &tr) || !strings.Contains(err.Error(), "e.jsonl: line 2") {
		t.Fatalf("err = %v, want an error naming line 2 (not a truncation warning)", err)
	}
}

func TestReadLastLineWithoutNewlineIsWhole(t *testing.T) {
	got, err := ReadAll[rec](strings.NewReader(`{"n":1}`+"\n"+`{"n":2}`), "e.jsonl")
	if err != nil || len(got) != 2 {
		t.Fatalf("got %v, %v; want 2 records and no error", got, err)
	}
}

func TestReadRefusesHugeLine(t *testing.T) {
	big := bytes.Repeat([]byte("x"), MaxLine+10)
	err := Read(bytes.NewReader(big), "z", func(rec) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("err = %v, want the line bound", err)
	}
}
