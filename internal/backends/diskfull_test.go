package backends_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/vmattach"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// freeBytes is the space st says is available, refused if it does not fit
// an int64.
func freeBytes(st *syscall.Statfs_t) (int64, error) {
	blocks, size := st.Bavail, st.Bsize
	if blocks > math.MaxInt64 || size <= 0 || int64(blocks) > math.MaxInt64/size {
		return 0, fmt.Errorf("%d free blocks of %d bytes: out of range", blocks, size)
	}
	return int64(blocks) * size, nil
}

// A root directory on a small tmpfs filled by a snapshot: the snapshot
// fails saying the disk is full, writes no manifest and leaves no object
// that is not what its name says (a later snapshot trusts objects by name);
// the snapshot taken before still restores, byte for byte.
func TestSnapshotOnAFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("SANDBOXER_REQUIRE_HARNESS") == "1" {
			t.Fatal("mounting a tmpfs needs root")
		}
		t.Skip("mounting a tmpfs needs root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", mnt).Run() })
	h := testharness.SSHHost(t)
	h.RootDir = mnt
	reg := backends.NewRegistry(vmattach.New())
	sb, err := reg.Create(ctx, backends.Request{ID: backends.NewID(), Profile: profile(t, "profile.workspace"), Host: h})
	if err != nil {
		t.Fatal(err)
	}
	write(t, sb.WorkspaceDir, "state.txt", "good state\n")
	good, err := reg.Snapshot(ctx, h, backends.SnapshotRequest{ID: "snap-good", SandboxID: sb.ID})
	if err != nil {
		t.Fatal(err)
	}

	// Data that does not compress, a little over half the free space: it
	// fits in the workspace once, not a second time in the store.
	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	free, err := freeBytes(&st)
	if err != nil {
		t.Fatalf("the %s tmpfs: %v", mnt, err)
	}
	if free < 4<<20 {
		t.Fatalf("only %d bytes free on the %s tmpfs after the first snapshot", free, mnt)
	}
	big := make([]byte, free/2+(1<<20))
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sb.WorkspaceDir, "big.bin"), big, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = reg.Snapshot(ctx, h, backends.SnapshotRequest{ID: "snap-full", SandboxID: sb.ID})
	if err == nil {
		t.Fatal("a snapshot larger than the free space succeeded")
	}
	t.Logf("the snapshot failed: %v", err)
	if !strings.Contains(err.Error(), "is full") || !strings.Contains(err.Error(), "no space left") {
		t.Errorf("the error does not say the disk is full: %v", err)
	}
	if left, _ := os.ReadDir(filepath.Join(mnt, ".sandboxer", "store", "tmp")); len(left) > 0 {
		t.Errorf("the failed snapshot left temporary files: %v", left)
	}
	store := filepath.Join(mnt, ".sandboxer", "store")
	if _, err := os.Stat(filepath.Join(store, "snapshots", "snap-full.json")); !os.IsNotExist(err) {
		t.Errorf("a manifest of the failed snapshot exists: %v", err)
	}
	// Every file under objects/ is an object whose content is its name.
	if err := checkpoint.VerifyObjects(store); err != nil {
		t.Errorf("a half-written object under a trusted name: %v", err)
	}

	// Room again: the earlier snapshot restores in place, byte for byte.
	if err := os.Remove(filepath.Join(sb.WorkspaceDir, "big.bin")); err != nil {
		t.Fatal(err)
	}
	write(t, sb.WorkspaceDir, "state.txt", "broken")
	if _, err := reg.RestoreInPlace(ctx, h, good.ID, h, sb.ID, checkpoint.RestoreOptions{Files: true, Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	if got := content(sb.WorkspaceDir, "state.txt"); got != "good state\n" {
		t.Fatalf("restored state.txt = %q", got)
	}
	if err := reg.Destroy(ctx, h, sb.ID); err != nil {
		t.Fatal(err)
	}
}
