package checkpoint

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/safepath"
)

// Manifests are read from hosts, where anyone with access can change them:
// decoding any bytes is an error or a manifest that is its snapshot's, has
// a digest that holds and entries that stay inside a workspace.
func FuzzParseManifest(f *testing.F) {
	ws := f.TempDir()
	for name, content := range map[string]string{"a.txt": "a", "dir/b.txt": "bb", "dir/sub/c": ""} {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			f.Fatal(err)
		}
	}
	if err := os.Symlink("a.txt", filepath.Join(ws, "link")); err != nil {
		f.Fatal(err)
	}
	s, err := Open(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	if _, err := s.Capture(ws, CaptureOptions{ID: "snap-seed", Now: time.Unix(1700000000, 0)}); err != nil {
		f.Fatal(err)
	}
	real, err := os.ReadFile(s.manifestPath("snap-seed"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add("snap-seed", real)
	f.Add("snap-other", real)
	f.Add("snap-seed", []byte(`{"version": 1, "id": "snap-seed", "entries": [{"path": "../x", "type": "file"}]}`))
	f.Add("x", []byte("{}"))
	f.Fuzz(func(t *testing.T, id string, data []byte) {
		m, err := ParseManifest(id, data)
		if err != nil {
			return
		}
		if m.ID != id || m.Check() != nil {
			t.Fatalf("accepted a manifest of %q as %q (check: %v)", m.ID, id, m.Check())
		}
		for _, e := range m.Entries {
			if err := safepath.Relative(e.Path); err != nil {
				t.Fatalf("accepted entry %q: %v", e.Path, err)
			}
		}
		if _, err := ParseListing(map[string][]byte{ManifestFile(id): data}); err != nil {
			t.Fatalf("ParseManifest accepted what ParseListing refuses: %v", err)
		}
	})
}
