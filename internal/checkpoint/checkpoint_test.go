package checkpoint

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func put(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// must fails the test on a setup step's error.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var now = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

func capture(t *testing.T, s *Store, ws, id string, mod func(*CaptureOptions)) *Manifest {
	t.Helper()
	opts := CaptureOptions{ID: id, Name: id, SandboxID: "sbx1", Now: now}
	if mod != nil {
		mod(&opts)
	}
	m, err := s.Capture(ws, opts)
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	return m
}

func TestCaptureRestoreInPlace(t *testing.T) {
	s := newStore(t)
	ws := t.TempDir()
	put(t, ws, "src/main.go", "package main\n")
	put(t, ws, "data/big.bin", strings.Repeat("x", 1<<20))
	put(t, ws, "debug.log", "noise")
	put(t, ws, ".env", "TOKEN=abc\nMODE=dev\n")
	must(t, os.Symlink("src/main.go", filepath.Join(ws, "link")))
	m := capture(t, s, ws, "snap1", func(o *CaptureOptions) {
		o.IncludeEnv = true
		o.Filter.Exclude = []string{"*.log"}
	})
	// StoredBytes is what the objects take on disk: the repetitive file
	// compressed, the 13-byte one raw (compressing it would not shrink it).
	if m.FileCount != 2 || m.SizeBytes != 1<<20+13 || m.StoredBytes != objectBytes(t, s) || m.StoredBytes > 1000 || !strings.HasPrefix(m.Digest, "sha256:") {
		t.Fatalf("manifest totals: %+v; objects hold %d bytes", m.Summary(), objectBytes(t, s))
	}
	if strings.Join(m.EnvNames, ",") != "MODE,TOKEN" {
		t.Fatalf("env names %v", m.EnvNames)
	}
	raw, _ := os.ReadFile(s.manifestPath("snap1"))
	if !strings.HasPrefix(string(raw), packedManifestHeader) {
		t.Fatalf("manifest not packed: %.40q", raw)
	}
	if plain, _ := encodeManifest(m); strings.Contains(string(plain), "abc") {
		t.Fatal("an env value is in the manifest")
	}

	// Break things.
	put(t, ws, "src/main.go", "corrupted")
	must(t, os.RemoveAll(filepath.Join(ws, "data")))
	put(t, ws, "src/new.go", "added later")
	put(t, ws, ".env", "TOKEN=changed\n")

	res, err := s.Restore("snap1", ws, RestoreOptions{Files: true, Env: true, Overwrite: true, Prune: true})
	if err != nil {
		t.Fatal(err)
	}
	if read(t, ws, "src/main.go") != "package main\n" || read(t, ws, "data/big.bin") != strings.Repeat("x", 1<<20) {
		t.Fatal("content not restored byte for byte")
	}
	if _, err := os.Stat(filepath.Join(ws, "src/new.go")); !os.IsNotExist(err) {
		t.Fatal("prune kept a file the snapshot does not have")
	}
	if read(t, ws, "debug.log") != "noise" {
		t.Fatal("prune removed an out-of-scope (excluded) file")
	}
	if target, _ := os.Readlink(filepath.Join(ws, "link")); target != "src/main.go" {
		t.Fatalf("link restored as %q", target)
	}
	if got := read(t, ws, ".env"); got != "MODE=dev\nTOKEN=abc\n" {
		t.Fatalf(".env restored as %q", got)
	}
	if res.FilesRestored != 3 || res.Pruned != 1 {
		t.Fatalf("result %+v", res)
	}
	entries, _ := os.ReadDir(ws)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), stagingPrefix) {
			t.Fatal("staging directory left behind")
		}
	}
}

func TestRestoreWithoutOverwriteKeepsExistingFiles(t *testing.T) {
	s := newStore(t)
	ws := t.TempDir()
	put(t, ws, "a.txt", "snapshot")
	put(t, ws, "b.txt", "snapshot")
	capture(t, s, ws, "snap1", nil)
	put(t, ws, "a.txt", "mine")
	must(t, os.Remove(filepath.Join(ws, "b.txt")))
	if _, err := s.Restore("snap1", ws, RestoreOptions{Files: true}); err != nil {
		t.Fatal(err)
	}
	if read(t, ws, "a.txt") != "mine" || read(t, ws, "b.txt") != "snapshot" {
		t.Fatal("overwrite=false: existing must be kept, missing restored")
	}
}

func TestIncrementalCaptureReadsAndStoresOnlyChanges(t *testing.T) {
	s := newStore(t)
	ws := t.TempDir()
	old := time.Now().Add(-time.Hour) // outside the stat cache's racy window
	for i := 0; i < 100; i++ {
		put(t, ws, fmt.Sprintf("f%03d", i), strings.Repeat(fmt.Sprint(i), 1000))
		must(t, os.Chtimes(filepath.Join(ws, fmt.Sprintf("f%03d", i)), old, old))
	}
	full := capture(t, s, ws, "full", nil)
	put(t, ws, "f007", "changed content")
	// Rewrite an unchanged-looking file behind the stat cache's back (same
	// size, old mtime put back): a capture that does not re-read unchanged
	// files keeps its old digest.
	p := filepath.Join(ws, "f050")
	st, _ := os.Stat(p)
	must(t, os.WriteFile(p, []byte(strings.Repeat("Q", int(st.Size()))), 0o644))
	must(t, os.Chtimes(p, old, old))
	inc := capture(t, s, ws, "inc", nil)
	if inc.StoredBytes != int64(len("changed content")) {
		t.Fatalf("stored %d bytes, want only the change (%d)", inc.StoredBytes, len("changed content"))
	}
	for i, e := range inc.Entries {
		if e.Path == "f050" && e.Digest != full.Entries[i].Digest {
			t.Fatal("an unchanged file (same size and mtime) was read again")
		}
	}
	if full.Digest == inc.Digest {
		t.Fatal("digest did not change")
	}
	d, err := s.Diff("full", "inc")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(d.FilesModified, ",") != "f007" || len(d.FilesAdded)+len(d.FilesRemoved) != 0 {
		t.Fatalf("diff %+v", d)
	}
}

func TestRestoreVerifiesBeforeTouchingTarget(t *testing.T) {
	s := newStore(t)
	ws := t.TempDir()
	put(t, ws, "a.txt", "aaaa")
	put(t, ws, "b.txt", "bbbb")
	m := capture(t, s, ws, "snap1", nil)
	var digest string
	for _, e := range m.Entries {
		if e.Path == "b.txt" {
			digest = e.Digest
		}
	}
	// Corrupt one object in the store.
	if err := os.WriteFile(s.objectPath(digest), []byte("evil"), 0o600); err != nil {
		t.Fatal(err)
	}
	target := t.TempDir()
	put(t, target, "a.txt", "keep me")
	_, err := s.Restore("snap1", target, RestoreOptions{Files: true, Overwrite: true, Prune: true})
	if err == nil || !strings.Contains(err.Error(), "b.txt") || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("want a corruption error naming b.txt, got %v", err)
	}
	entries, _ := os.ReadDir(target)
	if len(entries) != 1 || read(t, target, "a.txt") != "keep me" {
		t.Fatalf("target changed by a failed restore: %v", entries)
	}
}

func TestRestoreNeverWritesThroughSymlinks(t *testing.T) {
	s := newStore(t)
	outside := t.TempDir()
	put(t, outside, "victim.txt", "untouched")
	ws := t.TempDir()
	put(t, ws, "dir/file.txt", "inside")
	must(t, os.Symlink(filepath.Join(outside, "victim.txt"), filepath.Join(ws, "escape")))
	capture(t, s, ws, "snap1", nil)

	// The target has links where the snapshot has a directory and a file.
	target := t.TempDir()
	must(t, os.Symlink(outside, filepath.Join(target, "dir")))
	must(t, os.Symlink(filepath.Join(outside, "victim.txt"), filepath.Join(target, "escape")))
	if _, err := s.Restore("snap1", target, RestoreOptions{Files: true, Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	if read(t, outside, "victim.txt") != "untouched" {
		t.Fatal("restore wrote outside the workspace")
	}
	if _, err := os.Stat(filepath.Join(outside, "file.txt")); err == nil {
		t.Fatal("restore followed a directory symlink out of the workspace")
	}
	if read(t, target, "dir/file.txt") != "inside" {
		t.Fatal("file not restored inside the workspace")
	}
	if l, _ := os.Readlink(filepath.Join(target, "escape")); l != filepath.Join(outside, "victim.txt") {
		t.Fatal("symlink not restored as a link")
	}
}

func TestTamperedManifestRefused(t *testing.T) {
	s := newStore(t)
	ws := t.TempDir()
	put(t, ws, "a.txt", "a")
	capture(t, s, ws, "snap1", nil)
	raw, _ := os.ReadFile(s.manifestPath("snap1"))
	m, err := unpackManifest(raw)
	must(t, err)
	m.Entries[0].Path = "../escaped.txt"
	m.Digest = m.ComputeDigest() // even with a consistent digest
	raw, _ = json.Marshal(m)
	must(t, os.WriteFile(s.manifestPath("snap1"), raw, 0o600))
	_, err = s.Restore("snap1", t.TempDir(), RestoreOptions{Files: true, Overwrite: true})
	if err == nil || !strings.Contains(err.Error(), "..") {
		t.Fatalf("want refusal of a .. entry, got %v", err)
	}
	m.Entries[0].Path = "a.txt"
	m.Entries[0].Size = 99 // digest no longer matches
	raw, _ = json.Marshal(m)
	must(t, os.WriteFile(s.manifestPath("snap1"), raw, 0o600))
	if _, err := s.Load("snap1"); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("want corrupt manifest, got %v", err)
	}
}

func TestLimitsCheckedBeforeCapture(t *testing.T) {
	s := newStore(t)
	ws := t.TempDir()
	for i := 0; i < 5; i++ {
		put(t, ws, fmt.Sprintf("f%d", i), "12345")
	}
	_, err := s.Capture(ws, CaptureOptions{ID: "s1", Now: now, Limits: Limits{MaxFiles: 4}})
	if err == nil || !strings.Contains(err.Error(), "5 files, over the limit of 4") {
		t.Fatalf("got %v", err)
	}
	_, err = s.Capture(ws, CaptureOptions{ID: "s1", Now: now, Limits: Limits{MaxBytes: 20}})
	if err == nil || !strings.Contains(err.Error(), "25 bytes, over the limit of 20") {
		t.Fatalf("got %v", err)
	}
	if objs, _ := filepath.Glob(filepath.Join(s.Dir, "objects", "*", "*")); len(objs) != 0 {
		t.Fatal("a refused capture wrote objects")
	}
}

func TestDeleteFreesOnlyUnsharedObjects(t *testing.T) {
	s := newStore(t)
	ws := t.TempDir()
	put(t, ws, "shared.txt", "shared")
	put(t, ws, "only1.txt", "only in one")
	capture(t, s, ws, "snap1", nil)
	must(t, os.Remove(filepath.Join(ws, "only1.txt")))
	capture(t, s, ws, "snap2", nil)
	// Debris of an interrupted capture: a temp object in tmp/ and one in an
	// object's directory, an env without its manifest.
	must(t, os.WriteFile(filepath.Join(s.Dir, "tmp", "deadbeef"), []byte("half"), 0o600))
	shards, _ := filepath.Glob(filepath.Join(s.Dir, "objects", "*"))
	if len(shards) == 0 {
		t.Fatal("no object directory")
	}
	inShard := filepath.Join(shards[0], objectTempPrefix+"0123456789abcdef")
	must(t, os.WriteFile(inShard, []byte("half"), 0o600))
	must(t, os.WriteFile(filepath.Join(s.Dir, "snapshots", "orphan.env"), []byte("{}"), 0o600))
	if err := VerifyObjects(s.Dir); err != nil {
		t.Fatalf("an object being written is not an object: %v", err)
	}

	freed, err := s.Delete("snap1")
	if err != nil {
		t.Fatal(err)
	}
	if freed != int64(len("only in one")+len("half")) {
		t.Fatalf("freed %d", freed)
	}
	if _, err := os.Stat(inShard); err == nil {
		t.Fatal("gc left a temp object in an object directory")
	}
	if _, err := s.Restore("snap2", t.TempDir(), RestoreOptions{Files: true}); err != nil {
		t.Fatalf("remaining snapshot broken after delete: %v", err)
	}
	if _, err := s.Load("snap1"); err != ErrNotFound {
		t.Fatalf("deleted snapshot still loads: %v", err)
	}
	if tmps, _ := filepath.Glob(filepath.Join(s.Dir, "tmp", "*")); len(tmps) != 0 {
		t.Fatal("gc left temp debris")
	}
	if _, err := os.Stat(filepath.Join(s.Dir, "snapshots", "orphan.env")); err == nil {
		t.Fatal("gc left an env file without a manifest")
	}
	if _, err := s.Delete("snap1"); err != nil {
		t.Fatal("deleting twice must succeed")
	}
}

func TestConcurrentCapturesAndDeletes(t *testing.T) {
	s := newStore(t)
	ws := t.TempDir()
	for i := 0; i < 50; i++ {
		put(t, ws, fmt.Sprintf("f%02d", i), strings.Repeat("z", i*100))
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			id := fmt.Sprintf("c%d", i)
			if _, err := s.Capture(ws, CaptureOptions{ID: id, Now: now}); err != nil {
				t.Error(err)
				return
			}
			if i%2 == 0 {
				if _, err := s.Delete(id); err != nil {
					t.Error(err)
				}
			}
		}(i)
	}
	wg.Wait()
	list, _ := s.List()
	if len(list) != 4 {
		t.Fatalf("%d snapshots remain, want 4", len(list))
	}
	for _, sm := range list {
		if _, err := s.Restore(sm.ID, t.TempDir(), RestoreOptions{Files: true}); err != nil {
			t.Fatalf("%s broken by a concurrent delete: %v", sm.ID, err)
		}
	}
}

func TestTransferBetweenStores(t *testing.T) {
	a, b := newStore(t), newStore(t)
	ws := t.TempDir()
	put(t, ws, "x.txt", "x content")
	put(t, ws, ".env", "K=v\n")
	m := capture(t, a, ws, "snap1", func(o *CaptureOptions) { o.IncludeEnv = true })
	env, _ := a.LoadEnv(m)
	var digests []string
	for _, e := range m.Entries {
		if e.Type == TypeFile {
			digests = append(digests, e.Digest)
		}
	}
	missing := b.Missing(digests)
	var buf bytes.Buffer
	if err := a.ExportObjects(&buf, missing); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ImportObjects(&buf); err != nil {
		t.Fatal(err)
	}
	cp, err := b.Import(m, env, "copy1", "replica", now)
	if err != nil {
		t.Fatal(err)
	}
	if cp.Digest != m.Digest || cp.Source != "snap1" {
		t.Fatalf("copy %+v", cp.Summary())
	}
	target := t.TempDir()
	if _, err := b.Restore("copy1", target, RestoreOptions{Files: true, Env: true}); err != nil {
		t.Fatal(err)
	}
	if read(t, target, "x.txt") != "x content" || read(t, target, ".env") != "K=v\n" {
		t.Fatal("replica does not restore the original")
	}
	// A corrupted object in transit is refused.
	var bad bytes.Buffer
	must(t, a.ExportObjects(&bad, digests))
	raw := bytes.Replace(bad.Bytes(), []byte("x content"), []byte("y content"), 1)
	c := newStore(t)
	if _, err := c.ImportObjects(bytes.NewReader(raw)); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("corrupt object accepted: %v", err)
	}
}

func TestStatCacheDistrustsRacyFiles(t *testing.T) {
	s := newStore(t)
	ws := t.TempDir()
	put(t, ws, "f", "AAAA")
	capture(t, s, ws, "s1", nil)
	// Same size, mtime put back, but modified right after the scan: within
	// the racy window the file must be read again.
	p := filepath.Join(ws, "f")
	st, _ := os.Stat(p)
	must(t, os.WriteFile(p, []byte("BBBB"), 0o644))
	must(t, os.Chtimes(p, st.ModTime(), st.ModTime()))
	capture(t, s, ws, "s2", nil)
	d, err := s.Diff("s1", "s2")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.FilesModified) != 1 {
		t.Fatalf("a racily modified file was trusted from the stat cache: %+v", d)
	}
}

// Into an empty target (a new sandbox) files are written in place; a
// corrupted object still fails naming the file and leaves the target empty.
func TestFreshRestoreLeavesEmptyTargetOnCorruption(t *testing.T) {
	s := newStore(t)
	ws := t.TempDir()
	put(t, ws, "a/one.txt", "one")
	put(t, ws, "b/two.txt", "two")
	must(t, os.Symlink("a/one.txt", filepath.Join(ws, "link")))
	m := capture(t, s, ws, "snap1", nil)
	good := t.TempDir()
	res, err := s.Restore("snap1", good, RestoreOptions{Files: true})
	if err != nil || res.FilesRestored != 3 || read(t, good, "link") != "one" {
		t.Fatalf("fresh restore: %+v %v", res, err)
	}
	for _, e := range m.Entries {
		if e.Path == "b/two.txt" {
			must(t, os.WriteFile(s.objectPath(e.Digest), []byte("TWO"), 0o600))
		}
	}
	target := t.TempDir()
	_, err = s.Restore("snap1", target, RestoreOptions{Files: true})
	if err == nil || !strings.Contains(err.Error(), "b/two.txt") {
		t.Fatalf("want corruption naming b/two.txt, got %v", err)
	}
	if !isEmptyDir(target) {
		entries, _ := os.ReadDir(target)
		t.Fatalf("a failed fresh restore left %v", entries)
	}
	// Deleting the snapshots leaves no stat-cache pointer behind.
	if _, err := s.Delete("snap1"); err != nil {
		t.Fatal(err)
	}
	if l, _ := filepath.Glob(filepath.Join(s.Dir, "latest", "*")); len(l) != 0 {
		t.Fatalf("pointers left: %v", l)
	}
}

// A name JSON cannot hold is refused up front, naming the file, rather than
// stored as a snapshot that would not restore it as itself.
func TestCaptureRefusesNonUTF8Names(t *testing.T) {
	s := newStore(t)
	ws := t.TempDir()
	put(t, ws, "ok.txt", "fine")
	put(t, ws, "sub/bad\xff.txt", "unnamed")
	_, err := s.Capture(ws, CaptureOptions{ID: "s1", SandboxID: "sbx1", Now: now})
	if err == nil || !strings.Contains(err.Error(), "not valid UTF-8") || !strings.Contains(err.Error(), `sub/bad\xff.txt`) {
		t.Fatalf("want a refusal naming sub/bad\\xff.txt, got %v", err)
	}
	if list, _ := s.List(); len(list) != 0 {
		t.Fatalf("a refused capture left snapshots: %v", list)
	}
	// Excluding it, or leaving it out of the includes, makes the workspace capturable.
	capture(t, s, ws, "s2", func(o *CaptureOptions) { o.Filter.Exclude = []string{"sub"} })
	capture(t, s, ws, "s3", func(o *CaptureOptions) { o.Filter.Include = []string{"ok.txt"} })

	// A symlink whose target JSON cannot hold is refused the same way.
	if err := os.Symlink("target\xfe", filepath.Join(ws, "odd-link")); err != nil {
		t.Fatal(err)
	}
	_, err = s.Capture(ws, CaptureOptions{ID: "s4", SandboxID: "sbx1", Now: now, Filter: Filter{Exclude: []string{"sub"}}})
	if err == nil || !strings.Contains(err.Error(), "odd-link") || !strings.Contains(err.Error(), "not valid UTF-8") {
		t.Fatalf("want a refusal naming odd-link, got %v", err)
	}
}

// A PAX sparse entry, which tar.Reader would expand to its declared size
// from a few bytes of stream, is refused before anything is written.
func TestImportRefusesSparseEntries(t *testing.T) {
	name := strings.Repeat("a", 64)
	// tar.Writer drops GNU.sparse records, so the PAX header is written as
	// a regular entry whose type is then patched to 'x'.
	var pax bytes.Buffer
	for _, kv := range [][2]string{{"GNU.sparse.major", "1"}, {"GNU.sparse.minor", "0"},
		{"GNU.sparse.name", name}, {"GNU.sparse.realsize", "1099511627776"}} {
		rec := " " + kv[0] + "=" + kv[1] + "\n"
		n := len(rec) + 1
		for len(fmt.Sprint(n))+len(rec) != n {
			n++
		}
		fmt.Fprintf(&pax, "%d%s", n, rec)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	must(t, tw.WriteHeader(&tar.Header{Name: "PaxHeaders/" + name[:8], Typeflag: tar.TypeReg, Size: int64(pax.Len()), Format: tar.FormatUSTAR}))
	_, err := tw.Write(pax.Bytes())
	must(t, err)
	sparseMap := make([]byte, 512) // GNU sparse 1.0 map: no data fragments, all hole
	copy(sparseMap, "0\n")
	must(t, tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Size: int64(len(sparseMap)), Format: tar.FormatUSTAR}))
	_, err = tw.Write(sparseMap)
	must(t, err)
	must(t, tw.Close())
	raw := buf.Bytes()
	raw[156] = tar.TypeXHeader
	copy(raw[148:156], "        ")
	sum := 0
	for _, c := range raw[:512] {
		sum += int(c)
	}
	copy(raw[148:156], fmt.Sprintf("%06o\x00 ", sum))

	// The stream really is a sparse bomb to tar.Reader.
	hdr, err := tar.NewReader(bytes.NewReader(raw)).Next()
	if err != nil || hdr.Size != 1<<40 {
		t.Fatalf("test stream is not read as sparse: %v %+v", err, hdr)
	}
	s := newStore(t)
	if _, err := s.ImportObjects(bytes.NewReader(raw)); err == nil || !strings.Contains(err.Error(), "unexpected entry") {
		t.Fatalf("sparse entry accepted: %v", err)
	}
}
