package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A manifest is believed only under its own snapshot's name: one renamed
// to another id is refused, by the store and by the read-only parser.
func TestManifestUnderAnotherNameIsRefused(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Capture(ws, CaptureOptions{ID: "snap-a", Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(s.manifestPath("snap-a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseManifest("snap-a", data); err != nil {
		t.Fatalf("its own manifest: %v", err)
	}
	if _, err := ParseManifest("snap-b", data); err == nil || !strings.Contains(err.Error(), `holds snapshot "snap-a"`) {
		t.Fatalf("snap-a's manifest read as snap-b: %v", err)
	}
	if err := os.WriteFile(s.manifestPath("snap-b"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("snap-b"); err == nil {
		t.Fatal("the store loaded snap-a's manifest as snap-b")
	}
	if _, err := ParseListing(map[string][]byte{ManifestFile("snap-b"): data}); err == nil {
		t.Fatal("a listing accepted snap-a's manifest as snap-b")
	}
}
