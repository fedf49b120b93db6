package checkpoint

import (
	"archive/tar"
	"bytes"
	"crypto/rand"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// objectBytes is what the store's object files take, summed.
func objectBytes(t *testing.T, s *Store) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(filepath.Join(s.Dir, "objects"), func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		n += info.Size()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// objectFiles maps each object file's base name (digest, .zst or not) to
// whether it is compressed.
func objectFiles(t *testing.T, s *Store) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(s.Dir, "objects", "*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, f := range files {
		out[objectDigest(filepath.Base(filepath.Dir(f)), filepath.Base(f))] = strings.HasSuffix(f, compressedSuffix)
	}
	return out
}

func randomText(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails
	return b
}

// compressionWorkspace holds a text file that compresses, random data that
// does not, an empty file and a file exactly one sample long.
func compressionWorkspace(t *testing.T) (string, map[string][]byte) {
	t.Helper()
	var text bytes.Buffer
	for i := 0; text.Len() < 3<<20; i++ {
		text.WriteString("line ")
		text.WriteString(strings.Repeat("ab", i%7))
		text.WriteString(" of a log that compresses well\n")
	}
	files := map[string][]byte{
		"log.txt":     text.Bytes(),
		"random.bin":  randomText(t, 2<<20+17),
		"empty":       nil,
		"sample.txt":  bytes.Repeat([]byte("s"), compressSample),
		"tiny.txt":    []byte("hi\n"),
		"nested/x.go": []byte(strings.Repeat("package x\n", 5000)),
	}
	ws := t.TempDir()
	for rel, data := range files {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(ws, rel)), 0o755))
		must(t, os.WriteFile(filepath.Join(ws, rel), data, 0o644))
	}
	return ws, files
}

// Files that compress are stored as zstd, the rest raw; both restore byte
// for byte, and StoredBytes is what the objects take on disk.
func TestObjectsCompressedWhenTheyShrink(t *testing.T) {
	s := newStore(t)
	ws, files := compressionWorkspace(t)
	m := capture(t, s, ws, "snap1", nil)
	want := map[string]bool{"log.txt": true, "random.bin": false, "empty": false, "sample.txt": true, "tiny.txt": false, "nested/x.go": true}
	stored := objectFiles(t, s)
	for _, e := range m.Entries {
		if e.Type != TypeFile {
			continue
		}
		compressed, ok := stored[e.Digest]
		if !ok || compressed != want[e.Path] {
			t.Errorf("%s: stored %v, compressed %v; want compressed %v", e.Path, ok, compressed, want[e.Path])
		}
	}
	if m.StoredBytes != objectBytes(t, s) || m.StoredBytes >= m.SizeBytes/2 {
		t.Errorf("StoredBytes %d, objects on disk %d, content %d: want the bytes on disk, well under the content", m.StoredBytes, objectBytes(t, s), m.SizeBytes)
	}
	target := t.TempDir()
	if _, err := s.Restore("snap1", target, RestoreOptions{Files: true}); err != nil {
		t.Fatal(err)
	}
	for rel, data := range files {
		got, err := os.ReadFile(filepath.Join(target, rel))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s restored as %d bytes (%v), want %d", rel, len(got), err, len(data))
		}
	}
}

// A store written before objects were compressed holds them raw: they are
// found (no second copy is stored) and restore as before.
func TestRawObjectsOfEarlierStoresStillServe(t *testing.T) {
	s := newStore(t)
	ws, files := compressionWorkspace(t)
	capture(t, s, ws, "snap1", nil)
	// Rewrite every compressed object raw, as an earlier version stored it.
	for digest, compressed := range objectFiles(t, s) {
		if !compressed {
			continue
		}
		r, err := s.openObject(digest)
		must(t, err)
		data, err := io.ReadAll(r)
		must(t, err)
		must(t, r.Close())
		must(t, os.WriteFile(s.objectPath(digest), data, 0o600))
		must(t, os.Remove(s.compressedPath(digest)))
	}
	before := objectBytes(t, s)
	m := capture(t, s, ws, "snap2", func(o *CaptureOptions) { o.SandboxID = "other" }) // no stat cache: every file read
	if m.StoredBytes != 0 || objectBytes(t, s) != before {
		t.Fatalf("a second capture of the same files stored %d bytes (objects %d -> %d): the raw objects were not found", m.StoredBytes, before, objectBytes(t, s))
	}
	target := t.TempDir()
	if _, err := s.Restore("snap2", target, RestoreOptions{Files: true}); err != nil {
		t.Fatal(err)
	}
	for rel, data := range files {
		if got, err := os.ReadFile(filepath.Join(target, rel)); err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s restored as %d bytes (%v), want %d", rel, len(got), err, len(data))
		}
	}
}

// A compressed object altered on disk is refused at restore: the content
// it decompresses to is checked against its name, and nothing is restored.
func TestCorruptCompressedObjectRefused(t *testing.T) {
	s := newStore(t)
	ws := t.TempDir()
	put(t, ws, "log.txt", strings.Repeat("the same line again\n", 10000))
	m := capture(t, s, ws, "snap1", nil)
	digest := m.Entries[len(m.Entries)-1].Digest
	p := s.compressedPath(digest)
	// Another valid zstd stream, of other content: only the digest can tell.
	other, err := zstd.NewWriter(nil)
	must(t, err)
	must(t, os.WriteFile(p, other.EncodeAll([]byte(strings.Repeat("another line\n", 10000)), nil), 0o600))
	target := t.TempDir()
	_, err = s.Restore("snap1", target, RestoreOptions{Files: true})
	if err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("restore of an altered object: %v, want it refused as corrupt", err)
	}
	if _, err := os.Stat(filepath.Join(target, "log.txt")); err == nil {
		t.Fatal("the altered object was restored")
	}
}

// Objects travel between stores as stored; the receiving store checks each
// (decompressing the compressed ones) before it takes it.
func TestCompressedObjectsTransfer(t *testing.T) {
	src, dst := newStore(t), newStore(t)
	ws, files := compressionWorkspace(t)
	m := capture(t, src, ws, "snap1", nil)
	var digests []string
	for _, e := range m.Entries {
		if e.Type == TypeFile {
			digests = append(digests, e.Digest)
		}
	}
	var stream bytes.Buffer
	must(t, src.ExportObjects(&stream, dst.Missing(digests)))
	added, err := dst.ImportObjects(bytes.NewReader(stream.Bytes()))
	must(t, err)
	if added != objectBytes(t, src) || objectBytes(t, dst) != added {
		t.Fatalf("imported %d bytes; source objects %d, destination %d", added, objectBytes(t, src), objectBytes(t, dst))
	}
	env, err := src.LoadEnv(m)
	must(t, err)
	if _, err := dst.Import(m, env, "snap1", "snap1", now); err != nil {
		t.Fatal(err)
	}
	target := t.TempDir()
	if _, err := dst.Restore("snap1", target, RestoreOptions{Files: true}); err != nil {
		t.Fatal(err)
	}
	for rel, data := range files {
		if got, err := os.ReadFile(filepath.Join(target, rel)); err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s restored as %d bytes (%v), want %d", rel, len(got), err, len(data))
		}
	}
}

// A compressed entry whose content is not what its name says is refused
// before it enters the store.
func TestImportRefusesAMisnamedCompressedObject(t *testing.T) {
	s := newStore(t)
	enc, err := zstd.NewWriter(nil)
	must(t, err)
	data := enc.EncodeAll([]byte(strings.Repeat("content\n", 1000)), nil)
	name := strings.Repeat("ab", 32) + compressedSuffix
	var stream bytes.Buffer
	tw := tar.NewWriter(&stream)
	must(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(data)), Typeflag: tar.TypeReg}))
	_, err = tw.Write(data)
	must(t, err)
	must(t, tw.Close())
	if _, err := s.ImportObjects(&stream); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("import of a misnamed compressed object: %v, want it refused as corrupt", err)
	}
	if n := objectBytes(t, s); n != 0 {
		t.Fatalf("the store took %d bytes of it", n)
	}
}

// A store records its format; an earlier store (no format file) is taken
// as it is, and one of a later format is refused, not half understood.
func TestStoreFormat(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	must(t, err)
	if data, err := os.ReadFile(filepath.Join(s.Dir, "format")); err != nil || string(data) != "3\n" {
		t.Fatalf("format file %q (%v), want 3", data, err)
	}
	must(t, os.Remove(filepath.Join(dir, "format"))) // as an earlier version left it
	if _, err := Open(dir); err != nil {
		t.Fatalf("a store without a format file: %v", err)
	}
	// One of format 2 (0.2.0's) is opened and recorded as 3: an agent of
	// 0.2.0 then refuses it by its format instead of misreading the packed
	// manifests written next.
	must(t, os.WriteFile(filepath.Join(dir, "format"), []byte("2\n"), 0o600))
	if _, err := Open(dir); err != nil {
		t.Fatalf("a store of format 2: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "format")); string(data) != "3\n" {
		t.Fatalf("a store of format 2 opened: format file %q, want 3", data)
	}
	must(t, os.WriteFile(filepath.Join(dir, "format"), []byte("4\n"), 0o600))
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "format 4, newer") {
		t.Fatalf("a store of a later format: %v, want it refused", err)
	}
}
