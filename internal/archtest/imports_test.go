// Package archtest holds the import rule of docs/design.md ("Layers") as a
// test: it reads the rule's table from that file, so the graph keeps
// pointing one way and the design says what the code does.
package archtest

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/sand-boxer/terraform-provider-sandboxer/"

// root is the module root, relative to this package's directory.
const root = "../.."

// imports returns the module-internal packages the non-test Go files of
// dir import, relative to the module root (e.g. "internal/agent").
func imports(t *testing.T, dir string) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(root, dir))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, dir, e.Name()), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if rel, ok := strings.CutPrefix(p, module); ok {
				got[rel] = true
			}
		}
	}
	return got
}

// allowed reads the table between the imports markers of docs/design.md:
// each package's row lists what it may import, relative to internal/.
func allowed(t *testing.T) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok1 := strings.Cut(string(data), "<!-- imports:begin -->")
	table, _, ok2 := strings.Cut(rest, "<!-- imports:end -->")
	if !ok1 || !ok2 {
		t.Fatal("docs/design.md has no imports table between its markers")
	}
	rules := map[string][]string{}
	for line := range strings.Lines(table) {
		cells := strings.Split(strings.TrimSpace(line), "|")
		if len(cells) != 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`internal/") {
			continue
		}
		pkg := strings.Trim(strings.TrimSpace(cells[1]), "`")
		var may []string
		for _, dep := range strings.Split(cells[2], ",") {
			if dep = strings.TrimSpace(dep); dep != "" {
				may = append(may, "internal/"+dep)
			}
		}
		rules[pkg] = may
	}
	if len(rules) < 10 {
		t.Fatalf("read %d rows from the imports table; the test reads it wrong", len(rules))
	}
	return rules
}

// packages are the module's packages under internal/ with non-test Go files.
func packages(t *testing.T) []string {
	t.Helper()
	var pkgs []string
	err := filepath.WalkDir(filepath.Join(root, "internal"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir // not packages of the module: the go tool ignores them too
		}
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		if !slices.Contains(pkgs, rel) {
			pkgs = append(pkgs, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

func TestImportsFollowTheDesign(t *testing.T) {
	rules := allowed(t)
	for _, pkg := range packages(t) {
		may, ok := rules[pkg]
		if !ok {
			t.Errorf("%s is not in docs/design.md's imports table: add its row", pkg)
			continue
		}
		for dep := range imports(t, pkg) {
			if !slices.Contains(may, dep) {
				t.Errorf("%s imports %s, which docs/design.md's imports table does not allow", pkg, dep)
			}
		}
	}
	// The archtest package itself has only test files; every other row
	// names a package that exists.
	for pkg := range rules {
		if _, err := os.Stat(filepath.Join(root, pkg)); err != nil {
			t.Errorf("docs/design.md's imports table names %s, which does not exist", pkg)
		}
	}
}
