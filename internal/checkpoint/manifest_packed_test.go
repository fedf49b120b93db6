package checkpoint

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Manifests are stored packed, a fraction of their JSON; manifests stored
// before packing still load, list, restore and keep their objects through
// garbage collection.
func TestManifestsArePackedAndPlainOnesStillRead(t *testing.T) {
	s := newStore(t)
	ws := t.TempDir()
	for i := range 300 {
		put(t, ws, fmt.Sprintf("dir%02d/file%04d.txt", i%10, i), fmt.Sprint("content ", i))
	}
	old := capture(t, s, ws, "old", nil)
	plain, err := encodeManifest(old)
	must(t, err)
	packed, err := os.ReadFile(s.manifestPath("old"))
	must(t, err)
	if !bytes.HasPrefix(packed, []byte(packedManifestHeader)) || bytes.IndexByte(packed, 0) >= 0 {
		t.Fatalf("manifest not packed as text: %.60q", packed)
	}
	if len(packed)*2 > len(plain) {
		t.Fatalf("packed manifest takes %d bytes, its JSON %d: want less than half", len(packed), len(plain))
	}
	// What keeps objects safe from an older agent's garbage collection:
	// it cannot decode a packed manifest as JSON, so it stops.
	var probe map[string]any
	if json.Unmarshal(packed, &probe) == nil {
		t.Fatal("a packed manifest decodes as JSON: an older agent's garbage collection would see no entries")
	}
	if !IsManifestFile(filepath.Base(s.manifestPath("old"))) {
		t.Fatal("a packed manifest is not listed where older agents look")
	}

	// "old" as a store written before packing has it.
	must(t, os.WriteFile(s.manifestPath("old"), plain, 0o600))
	for i := range 300 {
		put(t, ws, fmt.Sprintf("dir%02d/file%04d.txt", i%10, i), fmt.Sprint("changed ", i))
	}
	capture(t, s, ws, "new", nil)
	if list, err := s.List(); err != nil || len(list) != 2 || list[0].ID != "old" || list[1].ID != "new" {
		t.Fatalf("list: %+v, %v", list, err)
	}
	if _, err := s.Delete("new"); err != nil {
		t.Fatal(err)
	}
	target := t.TempDir()
	if _, err := s.Restore("old", target, RestoreOptions{Files: true}); err != nil {
		t.Fatalf("a plain manifest's snapshot after garbage collection: %v", err)
	}
	if read(t, target, "dir07/file0007.txt") != "content 7" {
		t.Fatal("restored the wrong content")
	}
}

// A manifest packed in a way this code does not know is refused, naming a
// newer provider; garbage collection stops at it and removes nothing.
func TestNewerManifestPackingRefusedAndKept(t *testing.T) {
	s := newStore(t)
	ws := t.TempDir()
	put(t, ws, "a.txt", "a")
	capture(t, s, ws, "keep", nil)
	put(t, ws, "b.txt", "b")
	capture(t, s, ws, "next", nil)
	data, err := os.ReadFile(s.manifestPath("keep"))
	must(t, err)
	newer := append([]byte("sandboxer-manifest 4 zstd base64\n"), data[len(packedManifestHeader):]...)
	must(t, os.WriteFile(s.manifestPath("keep"), newer, 0o600))
	if _, err := s.Load("keep"); err == nil || !strings.Contains(err.Error(), "newer provider") || strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("want a refusal naming a newer provider, got %v", err)
	}
	if _, err := ParseListing(map[string][]byte{ManifestFile("keep"): newer}); err == nil {
		t.Fatal("a listing accepted a manifest of a newer packing")
	}
	before := objectBytes(t, s)
	if _, err := s.Delete("next"); err == nil || !strings.Contains(err.Error(), "garbage collection stopped") {
		t.Fatalf("want garbage collection stopped at the unreadable manifest, got %v", err)
	}
	if objectBytes(t, s) != before {
		t.Fatal("garbage collection removed objects while a manifest was unreadable")
	}
}

// A stat cache written before compression (format 1) is still trusted: the
// first capture after an upgrade does not read every file again.
func TestPlainStatCacheStillTrusted(t *testing.T) {
	s := newStore(t)
	ws := t.TempDir()
	old := time.Now().Add(-time.Hour) // outside the racy window
	for _, n := range []string{"a", "b"} {
		put(t, ws, n, "original "+n)
		must(t, os.Chtimes(filepath.Join(ws, n), old, old))
	}
	full := capture(t, s, ws, "full", nil)
	// The same cache, as format 1 wrote it.
	var body strings.Builder
	for _, e := range full.Entries {
		if e.Type == TypeFile {
			fmt.Fprintf(&body, "%s %d %d %s\n", e.Digest, e.Size, e.MtimeNs, e.Path)
		}
	}
	must(t, os.WriteFile(s.latestPath("sbx1"), []byte(fmt.Sprintf("%s %s %d %s\n%s", statCachePlain, full.ID,
		full.ScannedAtNs, digestOf([]byte(body.String())), body.String())), 0o600))
	// Rewritten behind the cache's back (same size, old mtime): only a
	// capture that trusts the cache keeps the old digest.
	put(t, ws, "b", "REWRITTEN!")
	must(t, os.Chtimes(filepath.Join(ws, "b"), old, old))
	inc := capture(t, s, ws, "inc", nil)
	if inc.Digest != full.Digest {
		t.Fatal("the format 1 stat cache was not trusted: the unchanged-looking file was read again")
	}
}

// A packed manifest whose frame claims far more than it holds (a few bytes
// claiming 600 MiB) is refused without allocating what it claims.
func TestPackedFrameClaimingMoreIsRefusedCheaply(t *testing.T) {
	frame := []byte{0x28, 0xb5, 0x2f, 0xfd, // zstd magic
		0xa0,                   // frame header: 4-byte content size, single segment
		0x00, 0x00, 0x80, 0x25, // content size: 600 MiB
		0x29, 0x00, 0x00, // last block, raw, 5 bytes
		'{', '}', ' ', ' ', ' '}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := unpackMetadata(frame)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a frame claiming 600 MiB with 5 bytes in it was accepted")
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Fatalf("refusing it allocated %d MiB", grew>>20)
	}
	m := append([]byte(packedManifestHeader), base64.StdEncoding.EncodeToString(frame)...)
	if _, err := ParseManifest("snap-x", m); err == nil || !strings.Contains(err.Error(), "manifest is corrupt") {
		t.Fatalf("want the manifest refused as corrupt, got %v", err)
	}
}
