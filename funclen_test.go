package droprun

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the most lines of logic a non-test function may hold
// (issue 38, item 8): lines that are not blank, not comments, and not
// inside a string literal that spans lines (help text).
const maxFuncLines = 80

// TestSmallFunctions holds every non-test function of the module to
// maxFuncLines lines of logic, so none grows back into a function a
// newcomer cannot read at once.
func TestSmallFunctions(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "results" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, p, src, 0)
		if err != nil {
			return err
		}
		for name, n := range logicLines(fset, f, strings.Split(string(src), "\n")) {
			if n > maxFuncLines {
				t.Errorf("%s: %s has %d lines of logic, more than %d: split it", p, name, n, maxFuncLines)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// logicLines counts each function's lines of logic in f, by name
// (Recv.Name for a method).
func logicLines(fset *token.FileSet, f *ast.File, lines []string) map[string]int {
	text := map[int]bool{} // lines inside a multi-line string literal
	ast.Inspect(f, func(n ast.Node) bool {
		if bl, ok := n.(*ast.BasicLit); ok && bl.Kind == token.STRING {
			for l := fset.Position(bl.Pos()).Line + 1; l <= fset.Position(bl.End()).Line; l++ {
				text[l] = true
			}
		}
		return true
	})
	out := map[string]int{}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		name := fd.Name.Name
		if fd.Recv != nil && len(fd.Recv.List) > 0 {
			if id, ok := ast.Unparen(fd.Recv.List[0].Type).(*ast.StarExpr); ok {
				if x, ok := id.X.(*ast.Ident); ok {
					name = x.Name + "." + name
				}
			} else if x, ok := fd.Recv.List[0].Type.(*ast.Ident); ok {
				name = x.Name + "." + name
			}
		}
		n := 0
		for l := fset.Position(fd.Body.Lbrace).Line + 1; l < fset.Position(fd.Body.Rbrace).Line; l++ {
			if s := strings.TrimSpace(lines[l-1]); s != "" && !strings.HasPrefix(s, "//") && !text[l] {
				n++
			}
		}
		out[name] += n
	}
	return out
}
