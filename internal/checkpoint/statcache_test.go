package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// twoOldFiles is a workspace of two files whose mtimes are outside the
// racy window, captured as "full" for sandbox sbx1.
func twoOldFiles(t *testing.T, s *Store) (ws string, full *Manifest, old time.Time) {
	t.Helper()
	ws = t.TempDir()
	old = time.Now().Add(-time.Hour)
	for _, n := range []string{"a", "b"} {
		put(t, ws, n, "original "+n)
		must(t, os.Chtimes(filepath.Join(ws, n), old, old))
	}
	return ws, capture(t, s, ws, "full", nil), old
}

// trustedByNext says whether the next capture trusts the stat cache: b is
// rewritten behind the cache's back (same size, old mtime), so only a
// capture that trusts the cache keeps b's old digest.
func trustedByNext(t *testing.T, s *Store, ws string, full *Manifest, old time.Time, id string) bool {
	t.Helper()
	put(t, ws, "b", "REWRITTEN!")
	must(t, os.Chtimes(filepath.Join(ws, "b"), old, old))
	return capture(t, s, ws, id, nil).Digest == full.Digest
}

// A capture's stat cache names its snapshot and holds nothing else: the
// manifest has each file's digest, size and mtime. The next capture
// trusts what that manifest says.
func TestStatCacheNamesItsSnapshot(t *testing.T) {
	s := newStore(t)
	ws, full, old := twoOldFiles(t, s)
	data, err := os.ReadFile(s.latestPath("sbx1"))
	must(t, err)
	if want := statCachePointer + " " + full.ID + "\n"; string(data) != want {
		t.Fatalf("stat cache %q, want %q", data, want)
	}
	if !trustedByNext(t, s, ws, full, old, "inc") {
		t.Fatal("the stat cache was not trusted: the unchanged-looking file was read again")
	}
}

// A stat cache naming a snapshot of another sandbox, or one whose manifest
// does not load, is not trusted: every file is read.
func TestStatCacheOfAnotherSnapshotIsNotTrusted(t *testing.T) {
	for name, damage := range map[string]func(s *Store, ws string, full *Manifest){
		// The same files, captured for another sandbox: a pointer to that
		// snapshot is not one that a capture of sbx1 wrote.
		"another sandbox's": func(s *Store, ws string, full *Manifest) {
			other := capture(t, s, ws, "other", func(o *CaptureOptions) { o.SandboxID = "sbx2" })
			must(t, os.WriteFile(s.latestPath("sbx1"), encodeStatCache(other.ID), 0o600))
		},
		"a damaged manifest's": func(s *Store, _ string, full *Manifest) {
			data, err := os.ReadFile(s.manifestPath(full.ID))
			must(t, err)
			must(t, os.WriteFile(s.manifestPath(full.ID), data[:len(data)/2], 0o600))
		},
	} {
		s := newStore(t)
		ws, full, old := twoOldFiles(t, s)
		damage(s, ws, full)
		if trustedByNext(t, s, ws, full, old, "inc") {
			t.Errorf("%s stat cache was trusted", name)
		}
	}
}

// A stat cache of format 2 (its facts in one zstd frame) is still trusted:
// the first capture after an upgrade does not read every file again.
func TestFormat2StatCacheStillTrusted(t *testing.T) {
	s := newStore(t)
	ws, full, old := twoOldFiles(t, s)
	var body strings.Builder
	for _, e := range full.Entries {
		if e.Type == TypeFile {
			fmt.Fprintf(&body, "%s %d %d %s\n", e.Digest, e.Size, e.MtimeNs, e.Path)
		}
	}
	head := fmt.Sprintf("%s %s %d %s\n", statCacheMagic, full.ID, full.ScannedAtNs, digestOf([]byte(body.String())))
	must(t, os.WriteFile(s.latestPath("sbx1"), encodeAll([]byte(body.String()), []byte(head)), 0o600))
	if !trustedByNext(t, s, ws, full, old, "inc") {
		t.Fatal("the format 2 stat cache was not trusted")
	}
}

// A volume's stat cache names the snapshot too, and yields that volume's
// files from its manifest, not the workspace's.
func TestVolumeStatCacheNamesItsSnapshot(t *testing.T) {
	vol := volumeFixture(t)
	s := newStore(t)
	ws := t.TempDir()
	put(t, ws, "compose.yaml", "services: {}\n")
	cv, err := s.CaptureVolume(vol, VolumeCaptureOptions{SandboxID: "sbx1", Name: "db-data"})
	must(t, err)
	m := capture(t, s, ws, "s1", func(o *CaptureOptions) { o.Volumes = []Volume{cv.Volume} })
	key := volumeCacheKey("sbx1", "db-data")
	data, err := os.ReadFile(s.latestPath(key))
	must(t, err)
	if want := statCachePointer + " " + m.ID + "\n"; string(data) != want {
		t.Fatalf("volume stat cache %q, want %q", data, want)
	}
	c := s.previous(key)
	for _, e := range m.Volumes[0].Entries {
		if got, ok := c.files[e.Path]; e.Type == TypeFile && (!ok || got.digest != e.Digest) {
			t.Errorf("volume file %s: cached %+v, want digest %s", e.Path, got, e.Digest)
		}
	}
	if _, ok := c.files["compose.yaml"]; ok || len(c.files) != 3 {
		t.Errorf("volume stat cache has %d files (compose.yaml: %v), want the volume's 3", len(c.files), ok)
	}
}
