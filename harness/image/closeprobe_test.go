package image

import (
	"bytes"
	"context"
	"debug/elf"
	"runtime"
	"testing"
)

// TestBuildCloseProbe: the prober builds from the embedded source as a
// static Linux binary for this machine's nodes.
func TestBuildCloseProbe(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs go build")
	}
	bin, err := BuildCloseProbe(context.Background(), runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("not an ELF binary: %v", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the prober is dynamically linked: a kind node may lack its libraries")
		}
	}
	t.Logf("%d bytes, %s", len(bin), f.Machine)
}
