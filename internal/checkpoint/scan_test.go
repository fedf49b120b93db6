package checkpoint

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The scan returns entries in path order without a sort of the whole list:
// names that sort differently as elements than as path prefixes must still
// come out in path order.
func TestScanReturnsPathOrder(t *testing.T) {
	ws := t.TempDir()
	for _, p := range []string{"a/x", "a/y/z", "a.txt", "a-b/c", "a0", "b", "a/.hidden", "a-b.txt", "A/q", "é/1", "a b/c"} {
		put(t, ws, p, p)
	}
	if err := os.Symlink("a.txt", filepath.Join(ws, "a-link")); err != nil {
		t.Fatal(err)
	}
	entries, err := scan(ws, Filter{}, false)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range entries {
		paths = append(paths, e.Path)
	}
	want := slices.Clone(paths)
	slices.Sort(want)
	if !slices.Equal(paths, want) {
		t.Fatalf("scan order:\n %s\nwant:\n %s", strings.Join(paths, " "), strings.Join(want, " "))
	}
	if len(paths) != 18 {
		t.Fatalf("scan found %d entries, want 18 (11 files, 6 directories, 1 symlink): %v", len(paths), paths)
	}
}
