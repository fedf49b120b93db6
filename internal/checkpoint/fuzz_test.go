package checkpoint

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
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
	// Forged manifests whose digest holds (anyone who can write the store
	// can recompute it): bookkeeping fields the digest does not cover, with
	// what JSON escapes, and an entry that escapes the workspace.
	seed, err := unpackManifest(real)
	if err != nil {
		f.Fatal(err)
	}
	forged := *seed
	forged.Name, forged.Description = "<a&b>\u2028\"\\", "caf\u00e9\x7f\t"
	forged.Metadata = map[string]string{"k<": "v\n", "": ""}
	forged.CreatedAt = time.Date(2024, 2, 29, 23, 59, 59, 123456789, time.FixedZone("", 5*3600+1800))
	if b, err := encodeManifest(&forged); err == nil {
		f.Add("snap-seed", b)                                                      // plain JSON, as manifests were stored before packing
		f.Add("snap-seed", bytes.Replace(b, []byte("caf"), []byte("\xff\xfe"), 1)) // invalid UTF-8
	}
	// Packings this code does not know, or damaged: refused, never guessed at.
	f.Add("snap-seed", []byte("sandboxer-manifest 4 zstd base64\n"+string(real[len(packedManifestHeader):])))
	f.Add("snap-seed", append([]byte(packedManifestHeader), "KLUv/Q"...))
	forged.Entries = append(forged.Entries, Entry{Path: "../x", Type: TypeFile, Digest: strings.Repeat("0", 64)})
	forged.Digest = forged.ComputeDigest()
	if b, err := packManifest(&forged); err == nil {
		f.Add("snap-seed", b)
	}
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
		// decode -> encode -> decode is stable: what the store writes back
		// (a copy, a GC rewrite) reads as the same manifest.
		enc, err := encodeManifest(m)
		if err != nil {
			t.Fatalf("cannot encode an accepted manifest: %v", err)
		}
		m2, err := ParseManifest(id, enc)
		if err != nil {
			t.Fatalf("re-encoded manifest refused: %v\n%s", err, enc)
		}
		enc2, err := encodeManifest(m2)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding not stable (%v):\n%s\n%s", err, enc, enc2)
		}
		// As the store writes it: packed, it reads as the same manifest.
		packed, err := packManifest(m)
		if err != nil {
			t.Fatalf("cannot pack an accepted manifest: %v", err)
		}
		if m3, err := ParseManifest(id, packed); err != nil {
			t.Fatalf("packed manifest refused: %v", err)
		} else if enc3, err := encodeManifest(m3); err != nil || !bytes.Equal(enc, enc3) {
			t.Fatalf("packing changed the manifest (%v):\n%s\n%s", err, enc, enc3)
		}
		if m2.Summary().Digest != m.Digest || !m2.CreatedAt.Equal(m.CreatedAt) || len(m2.Entries) != len(m.Entries) {
			t.Fatalf("round trip changed the manifest: %+v -> %+v", m.Summary(), m2.Summary())
		}
	})
}
