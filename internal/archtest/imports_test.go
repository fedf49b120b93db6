// Package archtest holds the import rules of docs/design.md ("One facade")
// as a test, so the graph keeps pointing one way without anyone watching it.
package archtest

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/sand-boxer/terraform-provider-sandboxer/"

// imports returns the module-internal packages the non-test Go files of
// dir import, relative to the module root (e.g. "internal/agent").
func imports(t *testing.T, dir string) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("..", "..", dir))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "..", dir, e.Name()), nil, parser.ImportsOnly)
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

// extensions are the packages under internal/backends, one per extension.
func extensions(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("..", "..", "internal", "backends"))
	if err != nil {
		t.Fatal(err)
	}
	var exts []string
	for _, e := range entries {
		if e.IsDir() {
			exts = append(exts, "internal/backends/"+e.Name())
		}
	}
	return exts
}

func TestImportRules(t *testing.T) {
	exts := extensions(t)
	if len(exts) < 3 {
		t.Fatalf("found %d extension packages under internal/backends; the test reads the wrong directory", len(exts))
	}
	rules := []struct {
		pkg    string
		forbid []string
		why    string
	}{
		{"internal/provider", []string{"internal/agent", "internal/metering", "internal/filelock"},
			"the Terraform layer talks to backends, which runs the agent and holds the ledger"},
		{"internal/backends", append([]string{"internal/provider"}, exts...),
			"the facade knows extensions only through the Extension interface"},
		{"internal/hosts", []string{"internal/backends", "internal/catalog", "internal/checkpoint", "internal/agent", "internal/metering", "internal/provider"},
			"hosts is transport only"},
		{"internal/checkpoint", []string{"internal/hosts", "internal/backends", "internal/agent", "internal/provider"},
			"the store works on local paths; the agent carries it to hosts"},
		{"internal/catalog", []string{"internal/hosts", "internal/backends", "internal/provider"},
			"profiles are data"},
	}
	for _, ext := range exts {
		var others []string
		for _, o := range exts {
			if o != ext {
				others = append(others, o)
			}
		}
		rules = append(rules, struct {
			pkg    string
			forbid []string
			why    string
		}{ext, append(others, "internal/provider"), "extensions do not import each other; shared mechanics live in backends"})
	}
	for _, r := range rules {
		got := imports(t, r.pkg)
		if len(got) == 0 {
			t.Errorf("%s imports nothing of the module: the test reads the wrong directory", r.pkg)
		}
		for _, f := range r.forbid {
			if got[f] {
				t.Errorf("%s imports %s: %s", r.pkg, f, r.why)
			}
		}
	}
}
