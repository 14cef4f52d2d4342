package plot

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/droprun/droprun/harness/atomicfile"
)

// Write writes every figure into outDir (created if needed) as NAME.png
// and NAME.svg. It refuses a figure whose name is not file-safe, and two
// figures with the same name.
func Write(outDir string, figs []Figure) error {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return fmt.Errorf("plot: creating %s: %w", outDir, err)
	}
	seen := map[string]bool{}
	for _, f := range figs {
		if f.Name == "" || fileSafe(f.Name) != f.Name {
			return fmt.Errorf("plot: figure name %q is not file-safe", f.Name)
		}
		if seen[f.Name] {
			return fmt.Errorf("plot: two figures named %q", f.Name)
		}
		seen[f.Name] = true
		for ext, data := range map[string][]byte{".png": f.PNG, ".svg": f.SVG} {
			path := filepath.Join(outDir, f.Name+ext)
			if err := atomicfile.Write(path, data); err != nil {
				return fmt.Errorf("plot: writing %s: %w", path, err)
			}
		}
	}
	return nil
}

// fileSafe turns a row name into a file name part: lower-case letters,
// digits, '-', '_' and '.' are kept, every other rune becomes '-'
// ("the-trap/introducing" → "the-trap-introducing").
func fileSafe(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		case r >= 'A' && r <= 'Z':
			b.WriteRune(r - 'A' + 'a')
		default:
			b.WriteByte('-')
		}
	}
	if b.Len() == 0 || strings.Trim(b.String(), ".") == "" {
		return "figure"
	}
	return b.String()
}

// uniqueNames makes the figures' names unique by suffixing a repeated name
// with -2, -3... (two rows can map to the same file-safe name, e.g.
// "a/b" and "a-b").
func uniqueNames(figs []Figure) {
	used := map[string]bool{}
	for i := range figs {
		name := figs[i].Name
		for k := 2; used[name]; k++ {
			name = figs[i].Name + "-" + strconv.Itoa(k)
		}
		used[name] = true
		figs[i].Name = name
	}
}
