package hosts_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflogtest"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

func checkFile(t *testing.T, path string, want []byte, mode os.FileMode) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes (sha256 %x), want %d (sha256 %x)", path, len(got), sha256.Sum256(got), len(want), sha256.Sum256(want))
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != mode {
		t.Fatalf("%s: mode %v, want %v", path, st.Mode().Perm(), mode)
	}
}

// checkDirMode fails unless path is a directory of mode 0700, the mode the
// transports give the directories they make (parents, temporaries).
func checkDirMode(t *testing.T, path string) {
	t.Helper()
	const mode os.FileMode = 0o700
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !st.IsDir() || st.Mode().Perm() != mode {
		t.Fatalf("%s: %v, want a directory %v", path, st.Mode(), mode)
	}
}

// checkOnly fails unless dir holds exactly names: no temporary left behind.
func checkOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, " ") != strings.Join(names, " ") {
		t.Fatalf("%s holds %q, want %q", dir, got, names)
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return b
}

func TestWriteFileOverSFTP(t *testing.T) {
	tr := newSSH(t, testharness.SSHConfig(t, "sftp", false))
	ctx := context.Background()
	root := t.TempDir()

	// Missing parents are made 0700, as the shell pipeline's umask 077 does.
	f := filepath.Join(root, "a", "b", "c", "secret")
	if err := hosts.WriteFile(ctx, tr, f, []byte("x=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	checkFile(t, f, []byte("x=1\n"), 0o600)
	for _, d := range []string{"a", "a/b", "a/b/c"} {
		checkDirMode(t, filepath.Join(root, d))
	}
	if n := hosts.SFTPWrites(tr); n != 1 {
		t.Fatalf("%d writes went through sftp, want 1", n)
	}

	// Through a *Host, as every caller holds the transport (the agent
	// install among them), and as a stream of unknown length, larger than
	// the 2 MiB in flight at once.
	h := &hosts.Host{Transport: tr, RootDir: root}
	big := randomBytes(5<<20 + 123)
	bin := filepath.Join(root, "a", "agent")
	if err := hosts.Upload(ctx, h, bin, io.MultiReader(bytes.NewReader(big[:1000]), bytes.NewReader(big[1000:])), 0o700); err != nil {
		t.Fatal(err)
	}
	checkFile(t, bin, big, 0o700)
	for i, mode := range []os.FileMode{0o644, 0o640, 0o755, 0o400} {
		p := filepath.Join(root, "a", fmt.Sprintf("mode%d", i))
		if err := hosts.WriteFile(ctx, h, p, []byte(mode.String()), mode); err != nil {
			t.Fatal(err)
		}
		checkFile(t, p, []byte(mode.String()), mode)
	}
	empty := filepath.Join(root, "empty")
	if err := hosts.WriteFile(ctx, h, empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	checkFile(t, empty, nil, 0o600)
	if n := hosts.SFTPWrites(tr); n != 7 {
		t.Fatalf("%d writes went through sftp, want 7", n)
	}
	checkOnly(t, filepath.Join(root, "a"), "agent", "b", "mode0", "mode1", "mode2", "mode3")
	checkOnly(t, filepath.Join(root, "a", "b", "c"), "secret")

	// Errors name the host and the path, and leave nothing behind.
	blocker := filepath.Join(root, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := hosts.WriteFile(ctx, tr, filepath.Join(blocker, "under"), []byte("x"), 0o600)
	if err == nil || !strings.Contains(err.Error(), `host "sftp"`) || !strings.Contains(err.Error(), blocker) {
		t.Fatalf("writing under a regular file: %v", err)
	}
	checkOnly(t, root, "a", "empty", "file")
}

// A write replaces the file in one rename: a reader sees the old content or
// the new, whole, never a mix or a short file, and an open descriptor keeps
// the old file.
func TestWriteFileOverSFTPReplacesAtomically(t *testing.T) {
	tr := newSSH(t, testharness.SSHConfig(t, "atomic", false))
	ctx := context.Background()
	dir := t.TempDir()
	f := filepath.Join(dir, "record.json")
	const size = 512 << 10
	versions := [][]byte{bytes.Repeat([]byte("A"), size), bytes.Repeat([]byte("B"), size)}
	if err := hosts.WriteFile(ctx, tr, f, versions[0], 0o600); err != nil {
		t.Fatal(err)
	}
	old, err := os.Open(f)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = old.Close() }() // only read
	var before syscall.Stat_t
	if err := syscall.Stat(f, &before); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var reads atomic.Int64
	readerErr := make(chan error, 1)
	go func() {
		defer close(readerErr)
		for {
			select {
			case <-stop:
				return
			default:
			}
			data, err := os.ReadFile(f)
			if err != nil {
				readerErr <- err
				return
			}
			if len(data) != size || bytes.Count(data, data[:1]) != size {
				readerErr <- fmt.Errorf("read a torn file: %d bytes, %d of %q", len(data), bytes.Count(data, data[:1]), data[:1])
				return
			}
			reads.Add(1)
		}
	}()
	for i := 1; i <= 20; i++ {
		if err := hosts.WriteFile(ctx, tr, f, versions[i%2], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	if err := <-readerErr; err != nil {
		t.Fatal(err)
	}
	t.Logf("%d whole reads during 20 replacements", reads.Load())
	checkFile(t, f, versions[0], 0o600)

	kept, err := io.ReadAll(old)
	if err != nil || !bytes.Equal(kept, versions[0]) {
		t.Fatalf("the descriptor opened before the writes no longer reads the old file: %v", err)
	}
	var after syscall.Stat_t
	if err := syscall.Stat(f, &after); err != nil {
		t.Fatal(err)
	}
	if after.Ino == before.Ino {
		t.Fatal("the file was rewritten in place, not replaced")
	}
	checkOnly(t, dir, "record.json")
	if n := hosts.SFTPWrites(tr); n != 21 {
		t.Fatalf("%d writes went through sftp, want 21", n)
	}
}

// pausingReader yields first, then waits for release before yielding rest.
type pausingReader struct {
	first, rest []byte
	paused      chan struct{}
	release     chan struct{}
	once        sync.Once
}

func (r *pausingReader) Read(p []byte) (int, error) {
	if len(r.first) > 0 {
		n := copy(p, r.first)
		r.first = r.first[n:]
		return n, nil
	}
	r.once.Do(func() { close(r.paused); <-r.release })
	if len(r.rest) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.rest)
	r.rest = r.rest[n:]
	return n, nil
}

// While a file is being written its data sits in a 0700 directory of its
// own, whatever the mode of the directory it goes to: SFTP creates files
// with the server's default mode, and nobody may open the file meanwhile.
func TestWriteFileOverSFTPKeepsDataPrivateWhileWriting(t *testing.T) {
	tr := newSSH(t, testharness.SSHConfig(t, "private-tmp", false))
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, ".env")
	r := &pausingReader{first: []byte("TOKEN="), rest: []byte("s3cret\n"), paused: make(chan struct{}), release: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- hosts.Upload(context.Background(), tr, f, r, 0o600) }()
	select {
	case <-r.paused:
	case err := <-done:
		t.Fatalf("the write ended before reading all its input: %v", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var tmp string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".env.tmp.") {
			tmp = filepath.Join(dir, e.Name())
		}
	}
	if tmp == "" {
		t.Fatalf("no temporary beside the file while writing: %v", entries)
	}
	checkDirMode(t, tmp)
	checkOnly(t, tmp, ".env")
	close(r.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	checkFile(t, f, []byte("TOKEN=s3cret\n"), 0o600)
	checkOnly(t, dir, ".env")
}

// cancellingReader cancels its context after yielding its first chunk and
// records any read after the write has returned.
type cancellingReader struct {
	cancel   context.CancelFunc
	reads    atomic.Int64
	returned atomic.Bool
	late     atomic.Bool
}

func (r *cancellingReader) Read(p []byte) (int, error) {
	if r.returned.Load() {
		r.late.Store(true)
	}
	if r.reads.Add(1) == 1 {
		r.cancel()
	}
	return len(p), nil // endless zeros
}

func TestWriteFileOverSFTPCancelled(t *testing.T) {
	tr := newSSH(t, testharness.SSHConfig(t, "cancel", false))
	dir := t.TempDir()
	f := filepath.Join(dir, "agent")
	if err := hosts.WriteFile(context.Background(), tr, f, []byte("old"), 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &cancellingReader{cancel: cancel}
	err := hosts.Upload(ctx, tr, f, r, 0o700)
	r.returned.Store(true)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	checkFile(t, f, []byte("old"), 0o700)
	// The temporary is removed by the abandoned write as it stops.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if entries, _ := os.ReadDir(dir); len(entries) == 1 {
			break
		}
		if time.Now().After(deadline) {
			checkOnly(t, dir, "agent")
		}
	}
	if r.late.Load() {
		t.Fatal("the reader was read after Upload returned")
	}
}

// Without a Subsystem line the host refuses sftp: files still arrive, by
// the shell pipeline, and the host is asked once per connection.
func TestWriteFileFallsBackWithoutSFTPSubsystem(t *testing.T) {
	d := testharness.StartPrivateSSHD(t, testharness.WithoutSFTP)
	tr := newSSH(t, d.SSHConfig("private"))
	var logs bytes.Buffer
	ctx := tflogtest.RootLogger(context.Background(), &logs)
	dir := t.TempDir()
	f := filepath.Join(dir, "x", "y", "secret")
	if err := hosts.WriteFile(ctx, tr, f, []byte("one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	checkFile(t, f, []byte("one\n"), 0o600)
	checkDirMode(t, filepath.Join(dir, "x"))
	checkDirMode(t, filepath.Join(dir, "x", "y"))
	big := randomBytes(3 << 20)
	if err := hosts.Upload(ctx, &hosts.Host{Transport: tr}, f, bytes.NewReader(big), 0o640); err != nil {
		t.Fatal(err)
	}
	checkFile(t, f, big, 0o640)
	checkOnly(t, filepath.Join(dir, "x", "y"), "secret")
	// A small file goes in a command that holds it (a shell), the large
	// one through a pipeline of its own (a session).
	if n := hosts.SessionsRun(tr); n != 1 {
		t.Fatalf("%d sessions of their own for a small and a large file, want 1", n)
	}
	if n := hosts.SFTPWrites(tr); n != 0 {
		t.Fatalf("%d writes went through sftp on a host without it", n)
	}
	const refused = "subsystem request for sftp by user root failed, subsystem not found"
	if n := d.Logged(refused, 1); n != 1 {
		t.Fatalf("two writes asked for sftp %d times on one connection, want 1", n)
	}
	entries, err := tflogtest.MultilineJSONDecode(&logs)
	if err != nil {
		t.Fatal(err)
	}
	var debug int
	for _, e := range entries {
		if e["@level"] == "debug" && strings.Contains(fmt.Sprint(e["@message"]), "no sftp subsystem") && e["host"] == "private" {
			debug++
		}
	}
	if debug != 1 {
		t.Fatalf("%d debug lines about the missing subsystem, want 1: %v", debug, entries)
	}

	// A new connection asks again: the host may have been reconfigured.
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := hosts.WriteFile(ctx, tr, f, []byte("two\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	checkFile(t, f, []byte("two\n"), 0o600)
	if n := d.Logged(refused, 2); n != 2 {
		t.Fatalf("sftp asked for %d times over two connections, want 2", n)
	}
}

// The sftp channel is a session and holds one of the transport's session
// slots while it is open: with a cap of 3 and the channel open, at most two
// commands run at once, however many are asked for, while writes go on.
func TestSFTPChannelCountsAgainstSessionCap(t *testing.T) {
	cfg := testharness.SSHConfig(t, "capped", false)
	cfg.MaxSessions = 3
	tr := newSSH(t, cfg)
	ctx := context.Background()
	dir := t.TempDir()
	running := filepath.Join(dir, "running")
	if err := os.Mkdir(running, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := hosts.WriteFile(ctx, tr, filepath.Join(dir, "first"), []byte("1"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Each command notes how many commands run beside it (itself included);
	// the sleep outlasts starting a session on a busy host.
	script := fmt.Sprintf(`touch %[1]s/$$; ls %[1]s | wc -l >> %[2]s; sleep 1; rm %[1]s/$$`,
		hosts.Quote(running), hosts.Quote(filepath.Join(dir, "seen")))
	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for i := range 6 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if _, err := run(t, tr, script); err != nil {
				errs <- err
			}
		}()
		go func() {
			defer wg.Done()
			if err := hosts.WriteFile(ctx, tr, filepath.Join(dir, fmt.Sprint(i)), []byte("x"), 0o600); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	seen, err := os.ReadFile(filepath.Join(dir, "seen"))
	if err != nil {
		t.Fatal(err)
	}
	most := 0
	for _, f := range strings.Fields(string(seen)) {
		var n int
		if _, err := fmt.Sscan(f, &n); err != nil {
			t.Fatalf("seen holds %q, not a count: %v", f, err)
		}
		most = max(most, n)
	}
	if most != 2 {
		t.Fatalf("at most %d commands ran at once beside the sftp channel with 3 sessions, want 2 (%q)", most, seen)
	}
	if n := hosts.SFTPWrites(tr); n != 7 {
		t.Fatalf("%d writes went through sftp, want 7", n)
	}
}

// With one session per connection the sftp channel would hold it for good:
// files go through the shell pipeline, and commands still run.
func TestWriteFileWithOneSession(t *testing.T) {
	tr := hosts.InProcessSSH(t, 1)
	f := filepath.Join(t.TempDir(), "f")
	if err := hosts.WriteFile(context.Background(), tr, f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	checkFile(t, f, []byte("x"), 0o644)
	if out, err := run(t, tr, "echo ok"); err != nil || out != "ok\n" {
		t.Fatalf("got %q, %v", out, err)
	}
	if n := hosts.SFTPWrites(tr); n != 0 {
		t.Fatalf("%d writes went through sftp with a single session", n)
	}
}

// When the connection dies under an open sftp channel, the next write
// redials and opens a new one.
func TestWriteFileOverSFTPAfterConnectionLoss(t *testing.T) {
	d := testharness.StartPrivateSSHD(t)
	tr := newSSH(t, d.SSHConfig("private"))
	ctx := context.Background()
	f := filepath.Join(t.TempDir(), "f")
	if err := hosts.WriteFile(ctx, tr, f, []byte("1"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The parent of a command in a session of its own (one with input) is
	// the connection's sshd process.
	if err := tr.Run(ctx, "kill -9 $PPID", strings.NewReader(""), nil); err == nil {
		t.Fatal("the connection survived killing its sshd process")
	}
	if err := hosts.WriteFile(ctx, tr, f, []byte("2"), 0o600); err != nil {
		t.Fatal(err)
	}
	checkFile(t, f, []byte("2"), 0o600)
	if n := hosts.SFTPWrites(tr); n != 2 {
		t.Fatalf("%d writes went through sftp, want 2", n)
	}
	if n := d.Accepted(); n != 2 {
		t.Fatalf("%d handshakes, want 2", n)
	}
}

// BenchmarkSingleFileTransfer compares sftp with the shell pipeline over
// the harness's loopback sshd, in the same run and on one connection per
// login: each iteration does the same work both ways, alternating which
// goes first. Reported: milliseconds per iteration of each way, their
// throughput and their ratio (shell/sftp above 1 means sftp is faster).
//
// It logs in twice: as root, whose login shell is bash, and as the
// harness's non-root user, whose login shell is /bin/sh. Every shell
// pipeline starts the login shell (`$SHELL -c`), and Debian's bash reads
// ~/.bashrc even then, so the pipeline's cost per file is whatever that
// file costs on the host; the /bin/sh login shows the cost with nothing
// in the way. Run with
//
//	go test -run '^$' -bench BenchmarkSingleFileTransfer -benchtime 5x ./internal/hosts/
func BenchmarkSingleFileTransfer(b *testing.B) {
	big := randomBytes(20 << 20)
	small := randomBytes(1 << 10)
	b.Run("root", func(b *testing.B) {
		benchTransfer(b, testharness.SSHConfig(b, "bench-root", false), b.TempDir(), big, small)
	})
	b.Run("nonroot", func(b *testing.B) {
		name := os.Getenv("SANDBOXER_TEST_SSH_NONROOT_USER")
		if name == "" || os.Geteuid() != 0 {
			b.Skip("needs the harness's non-root user, and root to give it a directory")
		}
		u, err := user.Lookup(name)
		if err != nil {
			b.Fatal(err)
		}
		var uid, gid int
		if _, err := fmt.Sscan(u.Uid, &uid); err != nil {
			b.Fatalf("uid %q: %v", u.Uid, err)
		}
		if _, err := fmt.Sscan(u.Gid, &gid); err != nil {
			b.Fatalf("gid %q: %v", u.Gid, err)
		}
		// b.TempDir's parents are closed to other users.
		dir, err := os.MkdirTemp("", "sandboxer-bench-") //nolint:usetesting // b.TempDir's parents are 0700: the non-root user could not reach it
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = os.RemoveAll(dir) }()
		if err := os.Chown(dir, uid, gid); err != nil {
			b.Fatal(err)
		}
		cfg := testharness.SSHConfig(b, "bench-nonroot", false)
		cfg.User = name
		benchTransfer(b, cfg, dir, big, small)
	})
}

func benchTransfer(b *testing.B, cfg hosts.SSHConfig, dir string, big, small []byte) {
	tr, err := hosts.NewSSH(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = tr.Close() }()
	ctx := context.Background()
	viaSFTP := func(p string, data []byte, mode os.FileMode) error {
		return tr.WriteFileAtomic(ctx, p, bytes.NewReader(data), mode)
	}
	viaShell := func(p string, data []byte, mode os.FileMode) error {
		return hosts.UploadShell(ctx, tr, p, bytes.NewReader(data), mode)
	}
	// Open the connection and the sftp channel before timing.
	if err := viaSFTP(filepath.Join(dir, "warm"), small, 0o600); err != nil {
		b.Fatal(err)
	}
	if err := viaShell(filepath.Join(dir, "warm"), small, 0o600); err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name  string
		files int
		data  []byte
		mode  os.FileMode
	}{
		{"20MiB", 1, big, 0o700},
		{"200x1KiB", 200, small, 0o600},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var took [2]time.Duration // sftp, shell
			ways := [2]func(string, []byte, os.FileMode) error{viaSFTP, viaShell}
			for i := 0; b.Loop(); i++ {
				for k := range 2 {
					w := (i + k) % 2
					start := time.Now()
					for f := range c.files {
						if err := ways[w](filepath.Join(dir, fmt.Sprintf("%s-%d-%d", c.name, w, f)), c.data, c.mode); err != nil {
							b.Fatal(err)
						}
					}
					took[w] += time.Since(start)
				}
			}
			n := float64(b.N)
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(took[0].Seconds()*1000/n, "sftp-ms/op")
			b.ReportMetric(took[1].Seconds()*1000/n, "shell-ms/op")
			b.ReportMetric(took[1].Seconds()/took[0].Seconds(), "shell/sftp")
			mb := float64(c.files*len(c.data)) * n / (1 << 20)
			b.ReportMetric(mb/took[0].Seconds(), "sftp-MiB/s")
			b.ReportMetric(mb/took[1].Seconds(), "shell-MiB/s")
		})
	}
	if hosts.SFTPWrites(tr) == 0 {
		b.Fatal("nothing went through sftp")
	}
}

// A small file goes through a shell the connection has idle while no sftp
// channel is open, so an apply that writes only small files never starts
// one; once a larger file opened the channel, small files take it too.
func TestSmallWritesTakeAnIdleShellBeforeSFTP(t *testing.T) {
	tr := newSSH(t, testharness.SSHConfig(t, "sftp", false))
	ctx := context.Background()
	root := t.TempDir()
	if err := tr.Run(ctx, "true", nil, nil); err != nil { // leaves a shell idle
		t.Fatal(err)
	}
	record := filepath.Join(root, "dir", "record.json")
	content := []byte("{\"id\": \"100%\\n\"}\n\x00\xff")
	if err := hosts.WriteFile(ctx, tr, record, content, 0o600); err != nil {
		t.Fatal(err)
	}
	checkFile(t, record, content, 0o600)
	checkDirMode(t, filepath.Join(root, "dir"))
	if s, f := hosts.ShellWrites(tr), hosts.SFTPWrites(tr); s != 1 || f != 0 {
		t.Fatalf("small file with a shell idle: %d shell writes, %d sftp writes; want 1, 0", s, f)
	}
	big := randomBytes(64 << 10)
	if err := hosts.WriteFile(ctx, tr, filepath.Join(root, "big"), big, 0o640); err != nil {
		t.Fatal(err)
	}
	checkFile(t, filepath.Join(root, "big"), big, 0o640)
	if err := hosts.WriteFile(ctx, tr, record, []byte("again"), 0o644); err != nil {
		t.Fatal(err)
	}
	checkFile(t, record, []byte("again"), 0o644)
	if s, f := hosts.ShellWrites(tr), hosts.SFTPWrites(tr); s != 1 || f != 2 {
		t.Fatalf("after a large file: %d shell writes, %d sftp writes; want 1, 2", s, f)
	}
	checkOnly(t, root, "big", "dir")
	checkOnly(t, filepath.Join(root, "dir"), "record.json")
}
