package hosts

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sync"
	"syscall"

	"github.com/hashicorp/terraform-plugin-log/tflog"
	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
)

// FileWriter is a Transport that can write a whole file on its host by
// itself, without running a shell pipeline for it. Upload and WriteFile use
// it when the transport has it.
type FileWriter interface {
	// WriteFileAtomic replaces path on the host with what r yields, with
	// permissions mode: a reader of path sees the old file or the new one,
	// never part of one. Missing parent directories are created 0700. When
	// the transport cannot do this on its host it returns an error matching
	// ErrNoFileWriter before reading anything from r, so the caller can
	// fall back to another way with the same r.
	WriteFileAtomic(ctx context.Context, path string, r io.Reader, mode os.FileMode) error
}

// ErrNoFileWriter is what a FileWriter returns when it cannot write files
// on its host (for SSH: the host has no sftp subsystem).
var ErrNoFileWriter = errors.New("the transport cannot write files directly on this host")

var _ FileWriter = (*SSH)(nil)

// sftpState is the sftp channel on one pooled connection, or the record
// that the host refused it there.
type sftpState struct {
	conn    *ssh.Client   // the connection it belongs to
	client  *sftp.Client  // nil when refused
	refusal error         // why the host refused, when it did
	ended   chan struct{} // closed once the channel is closed and its session token given back
}

// usable reports whether st is the live state of the connection conn.
func (st *sftpState) usable(conn *ssh.Client) bool {
	if st == nil || st.conn != conn {
		return false
	}
	if st.client == nil {
		return true // a refusal stands for the whole connection
	}
	select {
	case <-st.ended:
		return false
	default:
		return true
	}
}

// WriteFileAtomic writes through the sftp subsystem over the pooled
// connection: no process is started on the host per file, and the data
// needs no shell. The file is written in a fresh directory beside path,
// path.tmp.RANDOM, made 0700 before the file is created in it, then renamed
// over path (posix-rename@openssh.com, which replaces atomically). The
// private directory is there because SFTP cannot set a file's mode when
// creating it (pkg/sftp sends no attributes with OPEN), so a file created
// directly beside path would exist with the server's default mode, often
// 0644, until a chmod landed; another user could open it in that moment and
// read what is written after, say a 0600 .env. Nobody else can look up a
// name inside a 0700 directory, whatever they opened before its chmod.
func (s *SSH) WriteFileAtomic(ctx context.Context, p string, r io.Reader, mode os.FileMode) error {
	// The sftp calls take no context, so they run in their own goroutine and
	// a cancelled caller does not wait for a stalled host. The reader is cut
	// off before returning: r is never read after this method has returned.
	rd := &cutReader{ctx: ctx, r: r}
	done := make(chan error, 1)
	go func() { done <- s.writeFile(ctx, p, rd, mode) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		rd.cut()
		select {
		case err := <-done:
			return err
		default:
			// The write goes on until its next step, sees ctx, does not
			// rename and removes its temporary directory.
			return ctx.Err()
		}
	}
}

func (s *SSH) writeFile(ctx context.Context, p string, r io.Reader, mode os.FileMode) (err error) {
	st, err := s.sftpClient(ctx, nil)
	if err != nil {
		return err
	}
	tmpDir := p + ".tmp." + randomSuffix()
	err = makeTempDir(st.client, p, tmpDir)
	if errors.Is(err, sftp.ErrSSHFxConnectionLost) || errors.Is(err, io.EOF) {
		// The channel or its connection died since its last use (sshd
		// restarted, host rebooted, idle timeout): open it again, once, as
		// Run redials once. Nothing of r has been read yet.
		if st, err = s.sftpClient(ctx, st); err != nil {
			return err
		}
		err = makeTempDir(st.client, p, tmpDir)
	}
	if err != nil {
		return s.writeError(p, err)
	}
	c := st.client
	tmp := tmpDir + "/" + path.Base(p)
	defer func() {
		if err != nil {
			_ = c.Remove(tmp)
			_ = c.RemoveDirectory(tmpDir)
		}
	}()

	f, err := c.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return s.writeError(p, err)
	}
	// Concurrent writes keep up to 64 requests of 32 KiB in flight, so a
	// large file (the agent binary) is not paced by one round trip per
	// packet. The file is new and private, so out-of-order writes are fine.
	_, err = f.ReadFromWithConcurrency(r, 0)
	if err == nil {
		err = f.Chmod(mode.Perm())
	}
	if cerr := f.Close(); err == nil {
		err = cerr // the server may report a failed write only here
	}
	if err == nil {
		err = ctx.Err() // cancelled: leave path as it was
	}
	if err == nil {
		err = replace(c, tmp, p)
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return s.writeError(p, err)
	}
	// The file is in place; an empty directory left behind is litter, not
	// a failed write.
	_ = c.RemoveDirectory(tmpDir)
	s.sftpWrites.Add(1)
	return nil
}

func (s *SSH) writeError(p string, err error) error {
	return fmt.Errorf("host %q (%s): unable to write %s over sftp: %w", s.cfg.Name, s.cfg.Address, p, err)
}

// makeTempDir makes tmpDir (beside p) mode 0700, creating p's missing
// parents first.
func makeTempDir(c *sftp.Client, p, tmpDir string) error {
	// Mkdir first and look at the parents only when it fails: that saves a
	// round trip in the common case of an existing directory.
	err := c.Mkdir(tmpDir)
	if errors.Is(err, os.ErrNotExist) {
		if err = mkdirAll(c, path.Dir(p)); err == nil {
			err = c.Mkdir(tmpDir)
		}
	}
	if err != nil {
		return err
	}
	if err := c.Chmod(tmpDir, 0o700); err != nil {
		_ = c.RemoveDirectory(tmpDir)
		return err
	}
	return nil
}

// mkdirAll creates dir and its missing parents with mode 0700, as the shell
// pipeline's `umask 077; mkdir -p` does. SFTP's MKDIR takes no mode here
// either, so each new directory is chmodded before anything is made in it.
func mkdirAll(c *sftp.Client, dir string) error {
	if dir == "" || dir == "." || dir == "/" {
		return nil
	}
	fi, err := c.Stat(dir)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		return &os.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	if err := mkdirAll(c, path.Dir(dir)); err != nil {
		return err
	}
	if err := c.Mkdir(dir); err != nil {
		// Another writer may have made it meanwhile.
		if fi, serr := c.Stat(dir); serr == nil && fi.IsDir() {
			return nil
		}
		return err
	}
	return c.Chmod(dir, 0o700)
}

// replace renames tmp over p. OpenSSH offers posix-rename@openssh.com, which
// replaces p atomically; plain SFTP RENAME refuses an existing target, so
// without the extension p is removed first and a reader may find no file
// for a moment.
func replace(c *sftp.Client, tmp, p string) error {
	if _, ok := c.HasExtension("posix-rename@openssh.com"); ok {
		return c.PosixRename(tmp, p)
	}
	if err := c.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return c.Rename(tmp, p)
}

// sftpClient returns the live sftp channel of the pooled connection,
// opening it (and dialling the connection) if needed. stale is one the
// caller found dead, so that it is not handed out again. It returns an
// error matching ErrNoFileWriter when the host refuses sftp; that answer is
// remembered for the connection, so the host is asked once per connection.
func (s *SSH) sftpClient(ctx context.Context, stale *sftpState) (*sftpState, error) {
	if cap(s.sem) < 2 {
		// The channel would hold the only session token for good and every
		// command would wait forever.
		return nil, fmt.Errorf("host %q: one session per connection leaves none for sftp: %w", s.cfg.Name, ErrNoFileWriter)
	}
	s.mu.Lock()
	st := s.sftp
	ok := st != stale && st.usable(s.client)
	s.mu.Unlock()
	if !ok {
		var err error
		if st, err = s.openSFTPOnce(ctx, stale); err != nil {
			return nil, err
		}
	}
	if st.client == nil {
		return nil, fmt.Errorf("host %q has no sftp subsystem (%v): %w", s.cfg.Name, st.refusal, ErrNoFileWriter)
	}
	return st, nil
}

// openSFTPOnce is sftpClient's slow path, one caller at a time.
func (s *SSH) openSFTPOnce(ctx context.Context, stale *sftpState) (*sftpState, error) {
	select {
	case s.sftpOpening <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-s.sftpOpening }()

	conn, err := s.connected(ctx, nil)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	st := s.sftp
	s.mu.Unlock()
	if st != stale && st.usable(conn) {
		return st, nil // opened by the caller before us
	}
	st, err = s.openSFTP(ctx, conn)
	var dead deadConnError
	if errors.As(err, &dead) {
		// The pooled connection died (host rebooted, idle timeout): redial once.
		if conn, err = s.connected(ctx, conn); err != nil {
			return nil, err
		}
		st, err = s.openSFTP(ctx, conn)
	}
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.client == conn { // else redialled meanwhile: conn is closed, st dies with it
		s.sftp = st
	}
	s.mu.Unlock()
	if st.client == nil {
		tflog.Debug(ctx, "host has no sftp subsystem: single files go through a shell pipeline on this connection", map[string]any{
			"host": s.cfg.Name, "address": s.cfg.Address, "error": st.refusal.Error(),
		})
	}
	return st, nil
}

// deadConnError is a session channel that could not be opened or used
// because the connection is gone: worth a redial, unlike a refusal.
type deadConnError struct{ err error }

func (e deadConnError) Error() string { return e.err.Error() }
func (e deadConnError) Unwrap() error { return e.err }

// openSFTP opens an sftp channel on conn. It returns a state with a nil
// client when the host refuses the subsystem, and a deadConnError when conn
// is unusable.
func (s *SSH) openSFTP(ctx context.Context, conn *ssh.Client) (*sftpState, error) {
	if err := s.acquire(ctx); err != nil { // the channel's session token; see SSH.sem
		return nil, err
	}
	// A raw channel rather than sftp.NewClient: NewClient leaves the session
	// open when the subsystem request is refused (holding a server session
	// until the connection ends), and its error does not tell a refusal from
	// a dead connection, which a reply of false to the request does.
	type opened struct {
		ch   ssh.Channel
		reqs <-chan *ssh.Request
	}
	gone := s.gone(conn)
	o, err := whileRefused(ctx, s.closeIdleShell, func() (opened, error) {
		return withContext(ctx, gone, func() (opened, error) {
			ch, reqs, err := conn.OpenChannel("session", nil)
			return opened{ch, reqs}, err
		}, func(o opened) { _ = o.ch.Close() })
	})
	ch, reqs := o.ch, o.reqs
	if err != nil {
		<-s.sem
		err = fmt.Errorf("host %q (%s): unable to open SSH session: %w", s.cfg.Name, s.cfg.Address, err)
		var refused *ssh.OpenChannelError
		if errors.As(err, &refused) || ctx.Err() != nil {
			return nil, err // answered (or given up): the connection is alive
		}
		return nil, deadConnError{err}
	}
	go ssh.DiscardRequests(reqs)
	go func() { _, _ = io.Copy(io.Discard, ch.Stderr()) }() // keep the window open if the server writes to stderr
	release := func() {
		_ = ch.Close()
		<-s.sem
	}
	ok, err := ch.SendRequest("subsystem", true, ssh.Marshal(struct{ Name string }{"sftp"}))
	if err != nil {
		release()
		return nil, deadConnError{fmt.Errorf("host %q (%s): sftp subsystem request: %w", s.cfg.Name, s.cfg.Address, err)}
	}
	if !ok {
		release()
		return &sftpState{conn: conn, refusal: errors.New("the server refused the subsystem request")}, nil
	}
	// The version exchange takes no context; closing the channel ends it.
	stop := context.AfterFunc(ctx, func() { _ = ch.Close() })
	client, err := sftp.NewClientPipe(ch, ch)
	if !stop() {
		if client != nil {
			_ = client.Close()
		}
		release()
		return nil, ctx.Err()
	}
	if err != nil {
		// Accepted but not answering sftp: a Subsystem line naming a missing
		// or broken program. For this connection that is the same as none.
		release()
		return &sftpState{conn: conn, refusal: err}, nil
	}
	st := &sftpState{conn: conn, client: client, ended: make(chan struct{})}
	go func() {
		// The channel ends when the connection is closed or dies, or when the
		// server ends it; only then is its session token free.
		_ = client.Wait()
		_ = client.Close()
		release()
		s.mu.Lock()
		if s.sftp == st {
			s.sftp = nil
		}
		s.mu.Unlock()
		close(st.ended)
	}()
	return st, nil
}

// cutReader reads r until its context ends or cut is called; once cut has
// returned, r is not read again and belongs to the caller.
type cutReader struct {
	ctx context.Context
	mu  sync.Mutex
	r   io.Reader // nil once cut
}

func (c *cutReader) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.r == nil {
		return 0, context.Canceled
	}
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func (c *cutReader) cut() {
	c.mu.Lock()
	c.r = nil
	c.mu.Unlock()
}

func randomSuffix() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
