package checkpoint

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// owned is a file's owner and full mode, as a volume restore must keep them.
func owned(t *testing.T, p string) (uid, gid int, mode fs.FileMode) {
	t.Helper()
	st, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		t.Fatalf("%s: no owner", p)
	}
	return int(sys.Uid), int(sys.Gid), st.Mode()
}

// volumeFixture is a volume-like tree with owners other than the test's,
// a setgid directory, a sticky one, a mode-0700 root and a link to /etc.
func volumeFixture(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("volume owners can only be set by root")
	}
	v := t.TempDir()
	put(t, v, "pg/PG_VERSION", "15\n")
	put(t, v, "pg/base/1/1259", strings.Repeat("heap", 5000))
	put(t, v, "uploads/a.txt", "a")
	must(t, os.Symlink("/etc", filepath.Join(v, "etc-link")))
	must(t, os.Lchown(filepath.Join(v, "etc-link"), 70, 70))
	for _, p := range []string{"pg", "pg/PG_VERSION", "pg/base", "pg/base/1", "pg/base/1/1259"} {
		must(t, os.Chown(filepath.Join(v, p), 999, 998))
	}
	must(t, os.Chmod(filepath.Join(v, "pg/base"), 0o700|fs.ModeSetgid))
	must(t, os.Chmod(filepath.Join(v, "uploads"), 0o777|fs.ModeSticky))
	must(t, os.Chown(v, 999, 998))
	must(t, os.Chmod(v, 0o700))
	return v
}

// A volume captured with the workspace into one manifest restores with
// its owners, modes (special bits included), root and links as they were;
// an unchanged volume adds nothing the second time; garbage collection
// keeps its objects; a diff names its files volume:<name>/<path>.
func TestVolumeCaptureRestore(t *testing.T) {
	vol := volumeFixture(t)
	s := newStore(t)
	ws := t.TempDir()
	put(t, ws, "compose.yaml", "services: {}\n")

	captureWith := func(id string) *Manifest {
		t.Helper()
		cv, err := s.CaptureVolume(vol, VolumeCaptureOptions{SandboxID: "sbx1", Name: "db-data"})
		must(t, err)
		return capture(t, s, ws, id, func(o *CaptureOptions) {
			o.Volumes, o.VolumesStoredBytes = []Volume{cv.Volume}, cv.StoredBytes
		})
	}
	first := captureWith("s1")
	if first.Version != FormatVersionVolumes || first.FileCount != 4 || len(first.Volumes) != 1 {
		t.Fatalf("manifest: version %d, %d files, %d volumes", first.Version, first.FileCount, len(first.Volumes))
	}
	loaded, err := s.Load("s1")
	must(t, err)
	if loaded.Digest != first.Digest || len(loaded.Volumes[0].Entries) != len(first.Volumes[0].Entries) {
		t.Fatalf("the manifest read back differs")
	}
	second := captureWith("s2")
	if second.StoredBytes != 0 || second.Digest != first.Digest {
		t.Errorf("unchanged volume: stored %d bytes again, digest %s vs %s", second.StoredBytes, second.Digest, first.Digest)
	}
	if _, err := s.Delete("s1"); err != nil {
		t.Fatal(err)
	}

	// As the agent restores a volume itself, and as a helper container
	// does (writeback started file by file): the same content either way.
	for _, writeback := range []bool{false, true} {
		target := t.TempDir()
		res, err := s.RestoreVolume(loaded.Volumes[0], target, RestoreOptions{Files: true, Overwrite: true, Writeback: writeback})
		must(t, err)
		if res.FilesRestored != 4 {
			t.Errorf("writeback %v: restored %d entries, want 4 (3 files, 1 link)", writeback, res.FilesRestored)
		}
		for _, p := range []string{".", "pg", "pg/PG_VERSION", "pg/base", "pg/base/1/1259", "uploads", "uploads/a.txt", "etc-link"} {
			wu, wg, wm := owned(t, filepath.Join(vol, p))
			gu, gg, gm := owned(t, filepath.Join(target, p))
			if wu != gu || wg != gg || wm != gm {
				t.Errorf("writeback %v: %s: restored %d:%d %v, captured %d:%d %v", writeback, p, gu, gg, gm, wu, wg, wm)
			}
		}
		if read(t, target, "pg/base/1/1259") != strings.Repeat("heap", 5000) {
			t.Errorf("writeback %v: content differs", writeback)
		}
		if l, _ := os.Readlink(filepath.Join(target, "etc-link")); l != "/etc" {
			t.Errorf("writeback %v: the link points to %q", writeback, l)
		}
	}

	// Changed: one file in the volume; the diff says where.
	put(t, vol, "uploads/b.txt", "b")
	third := captureWith("s3")
	d := Compare(second, third, nil, nil)
	if len(d.FilesAdded) != 1 || d.FilesAdded[0] != "volume:db-data/uploads/b.txt" {
		t.Errorf("diff: %+v", d)
	}
}

// A corrupted volume object fails the restore naming the file, and a
// volume that had content keeps it unchanged; nothing is written through a
// link the volume holds where the snapshot has a directory.
func TestVolumeRestoreVerifiesFirst(t *testing.T) {
	vol := volumeFixture(t)
	s := newStore(t)
	cv, err := s.CaptureVolume(vol, VolumeCaptureOptions{SandboxID: "sbx1", Name: "db"})
	must(t, err)
	for _, e := range cv.Volume.Entries {
		if e.Path == "uploads/a.txt" {
			p := s.objectPath(e.Digest)
			if _, err := os.Stat(p); err != nil {
				p = s.compressedPath(e.Digest)
			}
			must(t, os.WriteFile(p, []byte("tampered"), 0o600))
		}
	}
	target := t.TempDir()
	put(t, target, "keep.txt", "mine")
	_, err = s.RestoreVolume(cv.Volume, target, RestoreOptions{Files: true, Overwrite: true, Prune: true})
	if err == nil || !strings.Contains(err.Error(), "uploads/a.txt") {
		t.Fatalf("restore of a corrupted object: %v", err)
	}
	entries, _ := os.ReadDir(target)
	if len(entries) != 1 || read(t, target, "keep.txt") != "mine" {
		t.Errorf("the target changed: %v", entries)
	}

	// A link where the snapshot has the directory pg: replaced, not followed.
	outside := t.TempDir()
	must(t, os.RemoveAll(target))
	must(t, os.Mkdir(target, 0o755))
	must(t, os.Symlink(outside, filepath.Join(target, "pg")))
	good := newStore(t)
	cv, err = good.CaptureVolume(vol, VolumeCaptureOptions{Name: "db"})
	must(t, err)
	_, err = good.RestoreVolume(cv.Volume, target, RestoreOptions{Files: true, Overwrite: true})
	must(t, err)
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("written through the link: %v", entries)
	}
}

// A helper running as root gives what it adds to the store to the store's
// owner: objects and their directories.
func TestVolumeCaptureGivesObjectsToTheStoreOwner(t *testing.T) {
	vol := volumeFixture(t)
	s := newStore(t)
	must(t, filepath.WalkDir(s.Dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 4321, 4321) //nolint:gosec // G122: the test's own temporary store
	}))
	owner, err := StoreOwner(s.Dir)
	must(t, err)
	if owner == nil || *owner != (Owner{4321, 4321}) {
		t.Fatalf("store owner: %+v", owner)
	}
	s.Owner = owner
	_, err = s.CaptureVolume(vol, VolumeCaptureOptions{Name: "db"})
	must(t, err)
	must(t, filepath.WalkDir(filepath.Join(s.Dir, "objects"), func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if uid, gid, _ := owned(t, p); uid != 4321 || gid != 4321 {
			t.Errorf("%s belongs to %d:%d", p, uid, gid)
		}
		return nil
	}))
}
