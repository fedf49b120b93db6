package hosts_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// countingRuns is an SSH transport that counts the commands run through
// it.
type countingRuns struct {
	*hosts.SSH
	runs int
}

func (c *countingRuns) Run(ctx context.Context, script string, stdin io.Reader, stdout io.Writer) error {
	c.runs++
	return c.SSH.Run(ctx, script, stdin, stdout)
}

func (c *countingRuns) RunPrivately(ctx context.Context, script string, stdout io.Writer) error {
	c.runs++
	return c.SSH.RunPrivately(ctx, script, stdout)
}

// A repo of a few files goes in the one command that makes its directory,
// which holds its tar (a command without input runs in a shell: no
// session of its own). One whose tar is larger is sent as one file over
// sftp and unpacked by a second command, still without a session. A
// large one streams through a session. Each way the tree arrives whole,
// modes and links as they were, and nothing of the transfer is left
// behind.
func TestMakeDirCopiesSmallReposWithoutASession(t *testing.T) {
	ssh := newSSH(t, testharness.SSHConfig(t, "makedir", false))
	tr := &countingRuns{SSH: ssh}
	ctx := context.Background()
	if _, err := run(t, tr, "true"); err != nil { // the shell is started
		t.Fatal(err)
	}

	small := t.TempDir()
	if err := os.MkdirAll(filepath.Join(small, "sub dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{"compose.yaml": 0o644, "sub dir/it's.sh": 0o750, "secret": 0o600} {
		if err := os.WriteFile(filepath.Join(small, name), []byte("content of "+name), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(small, "link")); err != nil {
		t.Fatal(err)
	}
	medium := t.TempDir()
	mid := randomBytes(16 << 10) // above what one command holds
	if err := os.WriteFile(filepath.Join(medium, "blob"), mid, 0o644); err != nil {
		t.Fatal(err)
	}
	large := t.TempDir()
	big := randomBytes(5 << 20) // above the small-copy bound, incompressible or not
	if err := os.WriteFile(filepath.Join(large, "blob"), big, 0o644); err != nil {
		t.Fatal(err)
	}

	base := t.TempDir()
	sessions, writes, runs := hosts.SessionsRun(ssh), hosts.SFTPWrites(ssh), tr.runs
	dst := filepath.Join(base, "small")
	if err := hosts.MakeDir(ctx, tr, dst, small, ""); err != nil {
		t.Fatal(err)
	}
	if got := tr.runs - runs; got != 1 {
		t.Errorf("the small copy ran %d commands, want 1", got)
	}
	if got := hosts.SessionsRun(ssh) - sessions; got != 0 {
		t.Errorf("the small copy ran %d commands in sessions of their own, want 0", got)
	}
	if got := hosts.SFTPWrites(ssh) - writes; got != 0 {
		t.Errorf("the small copy wrote %d files over sftp, want 0", got)
	}
	for name, mode := range map[string]os.FileMode{"compose.yaml": 0o644, "sub dir/it's.sh": 0o750, "secret": 0o600} {
		p := filepath.Join(dst, name)
		got, err := os.ReadFile(p)
		if err != nil || string(got) != "content of "+name {
			t.Errorf("%s: %q, %v", name, got, err)
		}
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want %v (%v)", name, st.Mode().Perm(), mode, err)
		}
	}
	if target, err := os.Readlink(filepath.Join(dst, "link")); err != nil || target != "/etc/passwd" {
		t.Errorf("symlink not kept as a link: %q %v", target, err)
	}
	leftovers(t, dst)

	sessions, writes = hosts.SessionsRun(ssh), hosts.SFTPWrites(ssh)
	dst = filepath.Join(base, "medium")
	if err := hosts.MakeDir(ctx, tr, dst, medium, ""); err != nil {
		t.Fatal(err)
	}
	if got := hosts.SessionsRun(ssh) - sessions; got != 0 {
		t.Errorf("the medium copy ran %d commands in sessions of their own, want 0", got)
	}
	if got := hosts.SFTPWrites(ssh) - writes; got != 1 {
		t.Errorf("the medium copy wrote %d files over sftp, want 1 (its tar)", got)
	}
	if got, err := os.ReadFile(filepath.Join(dst, "blob")); err != nil || !bytes.Equal(got, mid) {
		t.Errorf("medium copy differs (%d bytes, %v)", len(got), err)
	}
	leftovers(t, dst)

	sessions = hosts.SessionsRun(ssh)
	dst = filepath.Join(base, "large")
	if err := hosts.MakeDir(ctx, tr, dst, large, ""); err != nil {
		t.Fatal(err)
	}
	if got := hosts.SessionsRun(ssh) - sessions; got != 1 {
		t.Errorf("the large copy ran %d commands in sessions of their own, want 1 (its stream)", got)
	}
	if got, err := os.ReadFile(filepath.Join(dst, "blob")); err != nil || !bytes.Equal(got, big) {
		t.Errorf("large copy differs (%d bytes, %v)", len(got), err)
	}
	leftovers(t, dst)

	// An existing directory is refused before anything is sent into it.
	if err := os.WriteFile(filepath.Join(base, "small", "compose.yaml"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	writes = hosts.SFTPWrites(ssh)
	for _, src := range []string{small, medium} {
		if err := hosts.MakeDir(ctx, tr, filepath.Join(base, "small"), src, ""); !errors.Is(err, fs.ErrExist) {
			t.Errorf("existing directory: %v, want fs.ErrExist", err)
		}
	}
	if hosts.SFTPWrites(ssh) != writes {
		t.Error("a copy into an existing directory was sent")
	}
	if got, err := os.ReadFile(filepath.Join(base, "small", "compose.yaml")); err != nil || string(got) != "changed" {
		t.Errorf("a copy into an existing directory was unpacked: %q, %v", got, err)
	}
	leftovers(t, filepath.Join(base, "small"))
	// So is a guarded one whose guard is gone: nothing is made.
	dst = filepath.Join(base, "guarded")
	if err := hosts.MakeDir(ctx, tr, dst, small, filepath.Join(base, "no-such-record")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing guard: %v, want fs.ErrNotExist", err)
	}
	if _, err := os.Lstat(dst); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("made %s without its guard: %v", dst, err)
	}
}

func leftovers(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.Contains(d.Name(), ".sandboxer-copy-") || strings.Contains(d.Name(), ".tmp.") {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
