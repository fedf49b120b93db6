package hosts

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"
	"golang.org/x/crypto/ssh"
)

// A shell is a long-lived session on an SSH host that runs commands one
// after another, so that a command costs a round trip instead of a session:
// sshd starts every session through the user's login shell, which may read
// startup files (bash reads ~/.bashrc for commands run by sshd) taking tens
// to hundreds of milliseconds each time. A shell pays that once.
//
// Only commands without standard input run in a shell (their stdin is
// /dev/null, as a session's with no input); the rest get a session of their
// own. An idle shell keeps its session token (SSH.sem): the host counts its
// channel against MaxSessions. A command for a shell waits for an idle one
// or a free token; whoever needs a token for anything else while none is
// free closes an idle shell and takes its token (SSH.acquire).
//
// The protocol, over the session's stdin, stdout and stderr, one command at
// a time, in the framing of frame.go (a fresh Mark per command):
//
//	client: MARK \n SCRIPT-LINES \n MARK \n
//	shell:  MARK ack \n    on stdout and on stderr: the script is whole and about to run
//	        the script's stdout, then MARK end RC \n    on stdout
//	        the script's stderr, then MARK end \n       on stderr
//
// A script cut short (the connection ends mid-request) is never run: the
// shell runs only what ends with the mark line. The command's output and
// error go through pipes the loop waits on, so the end lines come only
// once nothing holds them open: a background child of the command that
// keeps its output writes before the end line, never into the next
// command's output. As in a session of its own, such a command is not
// finished until that child closes its output (or is killed with it).
//
// The client sends nothing while a command runs, so input then means the
// session ended (the client gave up on the command, or the connection
// died): a watcher reading the shell's input kills the shell's process
// group (sshd makes the session's process group the loop's, so the loop
// dies with its command, and the session with it). sshd's signal requests
// cannot do that: OpenSSH refuses them ("session signalling requires
// privilege separation").
type shell struct {
	client  *ssh.Client
	session *ssh.Session
	in      io.WriteCloser
	out     *bufio.Reader
	errs    *bufio.Reader
	ended   chan struct{} // closed when the session has ended
	exit    error         // session.Wait's answer; read only once ended is closed
	idle    time.Time     // since when it waits for a command
	running bool          // the loop was started: ended will be closed
	once    sync.Once
	release func() // gives the session token back
	id      int64  // the connection's count of shells started, for the DEBUG log
}

// shellScriptMax bounds the scripts sent to a shell: it reads a request a
// byte at a time (sh's read), about 2 ms per KiB, so a larger script is
// cheaper in a session of its own. The provider's scripts are a few KiB.
const shellScriptMax = 16 << 10

// shellProbeAfter is how long a shell may sit idle before its connection is
// probed ahead of a command: a connection that died silently meanwhile is
// found before a command is sent into it, and redialled.
const shellProbeAfter = 10 * time.Second

// shellBanner is what a shell prints on both streams once it is reading
// requests; whatever the login shell printed before it is discarded.
const shellBanner = "sandboxer-shell-v2\n"

// shellScript is the shell's loop, run with `sh -c`. Its variables are
// prefixed and not exported: a command sees the session's environment, as
// in a session of its own. The command runs in a subshell with eval, not
// with `sh -c`, so that no process's command line holds it: another user
// of the host can read any process's (/proc/PID/cmdline), and a command
// may hold a file's content (inlineWrite). In that subshell $$ is the
// loop's pid (unique among the commands running at once, one per shell),
// and the loop's variables but the script are unset. The redirections
// are exec'd, not put on compound commands, which would keep a saved copy
// of the session's stderr open in the command (dash, busybox ash): a
// background child of the command holding it would keep the session open
// once the loop exits. It runs in the foreground
// (signals as in a session) with its output through a cat each, which end
// once every holder of the command's output closed it; its status comes
// back through fd 6 to the command substitution. The watcher, in the
// background, reads the shell's input (fd 3: a background list's stdin is
// /dev/null) and kills the process group. The command gets none of the
// loop's own descriptors (3 to 6).
const shellScript = `printf 'sandboxer-shell-v2\n'; printf 'sandboxer-shell-v2\n' >&2
exec 3<&0 4>&1 5>&2
while IFS= read -r _sbx_n; do
	_sbx_s= _sbx_e=
	while IFS= read -r _sbx_l; do
		if [ "$_sbx_l" = "$_sbx_n" ]; then _sbx_e=1; break; fi
		_sbx_s="$_sbx_s$_sbx_l
"
	done
	[ -n "$_sbx_e" ] || exit 0
	{ IFS= read -r _sbx_l; kill -s KILL 0; } <&3 &
	_sbx_w=$!
	printf '%s ack\n' "$_sbx_n"; printf '%s ack\n' "$_sbx_n" >&2
	_sbx_r=$(exec 6>&1; { exec 2>&1; { ( unset _sbx_n _sbx_e _sbx_l _sbx_w _sbx_r; eval "$_sbx_s" ) </dev/null 3<&- 4>&- 5>&- 6>&-; echo $? >&6; } | cat >&4; } | cat >&5)
	kill "$_sbx_w" 2>/dev/null
	wait "$_sbx_w" 2>/dev/null
	printf '%s end\n' "$_sbx_n" >&2
	printf '%s end %s\n' "$_sbx_n" "$_sbx_r"
done`

// errNotRun says a command was not run in a shell (none could take it, or
// the one it was sent to had ended before it took it): it can be run
// elsewhere.
var errNotRun = errors.New("no shell took the command")

// runShell runs script in an idle shell, or in a new one. errNotRun says
// it did not run.
func (s *SSH) runShell(ctx context.Context, script string, stdout io.Writer) error {
	begun := time.Now()
	sh, started, err := s.shellFor(ctx)
	if err != nil {
		return err
	}
	if waited := time.Since(begun); waited >= shellWaitLogged {
		// Where an apply's time goes: a command that waits here waits for
		// other commands to end, or for a login shell to start (started:
		// its own, whose start is logged too).
		tflog.Debug(ctx, "waited for a shell", map[string]any{"host": s.cfg.Name, "shell": sh.id, "started": started,
			"waited_ms": waited.Milliseconds()})
	}
	return s.runOn(ctx, sh, script, stdout)
}

// shellWaitLogged is the shortest wait for a shell the DEBUG log tells.
const shellWaitLogged = 10 * time.Millisecond

// WriteSmallFile writes a small file (a record, an env file, a small
// repo's tar) in one command through a shell the connection has idle, as
// long as the connection has no sftp channel open: the channel's first use
// starts a session and a login shell on the host (0.1 s where ~/.bashrc is
// slow), which an apply that writes only small files then never pays. It
// never waits for a shell or starts one (a command that wants one would
// then start another); errNotRun (wrapped) when it declines, and Upload
// goes on to sftp, which is cheaper per file once open.
func (s *SSH) WriteSmallFile(ctx context.Context, p string, data []byte, mode os.FileMode) error {
	s.mu.Lock()
	open := s.sftp.usable(s.client) && s.sftp.client != nil
	s.mu.Unlock()
	if open {
		return fmt.Errorf("the sftp channel is open: %w", errNotRun)
	}
	if err := s.runIdle(ctx, inlineWrite(p, data, mode)); err != nil {
		return err
	}
	s.shellWrites.Add(1)
	return nil
}

// RunPrivately runs script, which has no input, in one of the
// connection's shells (privateRunner): a session's command is on the
// host's command lines (`sh -c`). errNotRun (wrapped) when no shell takes
// it: the host's sh cannot run the loop, or the script is too long.
func (s *SSH) RunPrivately(ctx context.Context, script string, stdout io.Writer) error {
	if len(script) > shellScriptMax || s.noShells.Load() {
		return fmt.Errorf("no shell for a script of %d bytes: %w", len(script), errNotRun)
	}
	if stdout == nil {
		stdout = io.Discard
	}
	return s.runShell(ctx, script, stdout)
}

// runIdle runs script in a shell that is idle now, never waiting for one
// or starting one: errNotRun (wrapped) when none is.
func (s *SSH) runIdle(ctx context.Context, script string) error {
	if len(script) > shellScriptMax || s.noShells.Load() {
		return fmt.Errorf("no shell for a script of %d bytes: %w", len(script), errNotRun)
	}
	sh := s.takeLiveIdle(ctx)
	if sh == nil {
		return fmt.Errorf("no shell is idle: %w", errNotRun)
	}
	return s.runOn(ctx, sh, script, io.Discard)
}

// runOn runs script in sh, taken for it, and gives sh back (or closes it
// when it failed).
func (s *SSH) runOn(ctx context.Context, sh *shell, script string, stdout io.Writer) error {
	err := s.runInShell(ctx, sh, script, stdout)
	var exit *CommandError
	if err == nil || errors.As(err, &exit) {
		s.putIdle(sh)
		return err
	}
	sh.close()
	if errors.Is(err, errNotRun) || ctx.Err() != nil {
		return err
	}
	return fmt.Errorf("host %q (%s): %w", s.cfg.Name, s.cfg.Address, err)
}

// maxShellStarts is how many shells a connection starts at once. Each
// start runs the user's login shell, which on some hosts burns a fifth of
// a second of CPU (a ~/.bashrc running `pyenv init`): the burst of short
// commands that opens an apply is served sooner by the first shells than
// by eight login shells starting side by side on a small host, and a
// shell is started only for a command that still finds none idle.
const maxShellStarts = 2

// shellFor returns an idle shell, or starts one when a token is free and
// fewer than maxShellStarts are being started, waiting for whichever comes
// first; started says it started the one it returns.
func (s *SSH) shellFor(ctx context.Context) (sh *shell, started bool, err error) {
	failed := s.dialFailures()
	for {
		if sh := s.takeLiveIdle(ctx); sh != nil {
			return sh, false, nil
		}
		// While the host is being warmed (Warm), its shell is the one to
		// wait for: starting another would run a second login shell beside
		// it and finish no sooner.
		starting, warmed := s.starting, s.warmingNow()
		if warmed != nil {
			starting = nil
		}
		select {
		case starting <- struct{}{}:
			if sh, err := s.startWhenFree(ctx); sh != nil || err != nil {
				return sh, sh != nil, err
			}
		case <-s.idleReady:
		case <-warmed:
			if err := s.failedSince(failed); err != nil {
				return nil, false, err // the warm-up's dial: this command's too
			}
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// takeLiveIdle returns an idle shell whose connection still answers (one
// idle for shellProbeAfter is probed first), closing dead ones on the way;
// nil when none is idle.
func (s *SSH) takeLiveIdle(ctx context.Context) *shell {
	for {
		sh := s.takeIdle()
		if sh == nil || time.Since(sh.idle) < shellProbeAfter || alive(ctx, sh.client) {
			return sh
		}
		tflog.Debug(ctx, "an idle shell's connection is gone: closing the shell; the next one redials", map[string]any{"host": s.cfg.Name})
		sh.close()
	}
}

// startWhenFree, holding one of the starting tokens (given back on
// return), starts a shell once a session token is free; nil, nil when a
// shell became idle first.
func (s *SSH) startWhenFree(ctx context.Context) (*shell, error) {
	defer func() { <-s.starting }()
	select {
	case s.sem <- struct{}{}:
	case <-s.idleReady:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	n := s.startsInFlight.Add(1)
	defer s.startsInFlight.Add(-1)
	for most := s.startsMost.Load(); n > most && !s.startsMost.CompareAndSwap(most, n); most = s.startsMost.Load() {
	}
	return s.startShell(ctx)
}

// alive reports whether client answers a request (any reply, even a
// refusal, is an answer); a connection that answers nothing is closed by
// its keepAlive, which ends the wait.
func alive(ctx context.Context, client *ssh.Client) bool {
	_, err := withContext(ctx, nil, func() (bool, error) {
		_, _, err := client.SendRequest("keepalive@openssh.com", true, nil)
		return true, err
	}, func(bool) {})
	return err == nil
}

// takeIdle returns an idle shell of the pooled connection, if any, and
// passes the word on when more are idle.
func (s *SSH) takeIdle() *shell {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.idle) > 0 {
		sh := s.idle[len(s.idle)-1]
		s.idle = s.idle[:len(s.idle)-1]
		select {
		case <-sh.ended:
			sh.close()
			continue
		default:
		}
		if sh.client != s.client {
			sh.close() // of a connection given up
			continue
		}
		if len(s.idle) > 0 {
			s.signalIdle()
		}
		return sh
	}
	return nil
}

// putIdle keeps sh for the next command and tells one waiter.
func (s *SSH) putIdle(sh *shell) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sh.client != s.client {
		sh.close()
		return
	}
	sh.idle = time.Now()
	s.idle = append(s.idle, sh)
	s.signalIdle()
}

func (s *SSH) signalIdle() {
	select {
	case s.idleReady <- struct{}{}:
	default:
	}
}

// startShell opens a session and starts a shell in it, with a token the
// caller took; on failure the token is given back. errNotRun (wrapped) says
// that no shell came up but a session of its own may work.
func (s *SSH) startShell(ctx context.Context) (*shell, error) {
	begun := time.Now()
	release := sync.OnceFunc(func() { <-s.sem })
	session, client, err := s.newSession(ctx)
	if err != nil {
		release()
		return nil, err
	}
	sh := &shell{client: client, session: session, release: release, ended: make(chan struct{})}
	in, err1 := session.StdinPipe()
	out, err2 := session.StdoutPipe()
	errs, err3 := session.StderrPipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		sh.close()
		return nil, err
	}
	sh.in, sh.out, sh.errs = in, bufio.NewReaderSize(out, 64<<10), bufio.NewReaderSize(errs, 4<<10)
	if err := s.start(ctx, client, session, Command("sh", "-c", shellScript)); err != nil {
		sh.close()
		return nil, err
	}
	sh.running = true
	go func() {
		sh.exit = session.Wait()
		close(sh.ended)
	}()
	// Both banners: a host whose sh cannot run the loop answers with an
	// exit instead; one that stopped answering is closed by keepAlive.
	ready := make(chan error, 2)
	go func() { ready <- copyUntil(io.Discard, sh.out, []byte(shellBanner)) }()
	go func() { ready <- copyUntil(io.Discard, sh.errs, []byte(shellBanner)) }()
	for range 2 {
		select {
		case err = <-ready:
		case <-ctx.Done():
			err = ctx.Err()
		}
		if err == nil {
			continue
		}
		sh.close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("host %q (%s): unable to start a shell: %w", s.cfg.Name, s.cfg.Address, err)
		}
		// The session ended before the banner. When the host said how the
		// shell exited, its sh cannot run the loop: sessions of their own
		// from now on. Else the connection was lost: this command goes to a
		// session of its own, which redials.
		select {
		case <-sh.ended:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		var exit *ssh.ExitError
		if sh.exit == nil || errors.As(sh.exit, &exit) {
			s.noShells.Store(true)
			tflog.Debug(ctx, "host cannot keep a shell: every command gets a session of its own", map[string]any{
				"host": s.cfg.Name, "address": s.cfg.Address, "exit": fmt.Sprint(sh.exit),
			})
		}
		return nil, fmt.Errorf("host %q (%s): the shell ended before it started: %w", s.cfg.Name, s.cfg.Address, errNotRun)
	}
	sh.id = s.shellsStarted.Add(1)
	tflog.Debug(ctx, "started a shell", map[string]any{"host": s.cfg.Name, "address": s.cfg.Address, "shell": sh.id,
		"start_ms": time.Since(begun).Milliseconds()})
	return sh, nil
}

// close ends the shell's session and gives its token back once the host
// has ended it too (see closeForToken), without waiting for that.
func (sh *shell) close() {
	sh.once.Do(func() { _ = sh.session.Close() })
	if !sh.running {
		sh.release() // no command was started in the session: nothing outlives it
		return
	}
	go func() {
		<-sh.ended // a host that does not answer the close is closed by keepAlive
		sh.release()
	}()
}

// closeForToken ends the shell's session and returns once the host has
// ended it too; the caller takes over its token. Closing the channel is not
// enough: sshd counts the session against MaxSessions until the shell's
// processes have exited (it sends its own close only then) and been
// reaped, so a session opened at once with the token would be one over the
// cap and refused. After the wait a refusal is rare (the reaping may still
// lag); whileRefused asks again when it happens. When ctx ends first, the
// token goes back as close gives it.
func (sh *shell) closeForToken(ctx context.Context) error {
	sh.once.Do(func() { _ = sh.session.Close() })
	select {
	case <-sh.ended:
		return nil
	case <-ctx.Done():
		go func() {
			<-sh.ended
			sh.release()
		}()
		return ctx.Err()
	}
}

// runInShell runs script in sh. A nil error or a *CommandError leaves the
// shell ready for the next command; any other error ends it (the caller
// closes it). errNotRun says the command never ran.
func (s *SSH) runInShell(ctx context.Context, sh *shell, script string, stdout io.Writer) error {
	mark := NewMark()
	var req bytes.Buffer
	req.Grow(len(script) + 2*len(mark) + 3)
	req.WriteString(string(mark) + "\n" + script)
	if !strings.HasSuffix(script, "\n") {
		req.WriteByte('\n')
	}
	req.WriteString(string(mark) + "\n")

	ack := []byte(string(mark) + " ack\n")
	outEnd := []byte(string(mark) + " end ") // followed by the status
	errEnd := []byte(string(mark) + " end\n")
	stderr := &tailBuffer{n: stderrTailBytes}
	// The caller's stdout, cut when this returns early: it is theirs again.
	w := &outWriter{w: stdout}
	acked := make(chan error, 1)
	done := make(chan error, 1)
	rcs := make(chan int, 1)
	errDone := make(chan error, 1)
	go func() {
		if err := copyUntil(io.Discard, sh.out, ack); err != nil {
			acked <- err
			return
		}
		acked <- nil
		if err := copyUntil(w, sh.out, outEnd); err != nil {
			done <- err
			return
		}
		line, err := sh.out.ReadString('\n')
		if err != nil {
			done <- err
			return
		}
		rc, err := strconv.Atoi(strings.TrimSpace(line))
		if err != nil {
			done <- fmt.Errorf("the shell answered %q for an exit status", line)
			return
		}
		rcs <- rc
		done <- w.error()
	}()
	go func() {
		// Anything before the ack is not this command's: what the
		// previous one left is ended by its own end line.
		if err := copyUntil(io.Discard, sh.errs, ack); err != nil {
			errDone <- err
			return
		}
		errDone <- copyUntil(stderr, sh.errs, errEnd)
	}()

	if _, err := sh.in.Write(req.Bytes()); err != nil {
		return errNotRun // the shell had ended: the script never reached it whole
	}
	select {
	case err := <-acked:
		if err == nil {
			break
		}
		// The shell's output ended without an acknowledgement. If the host
		// said how the shell exited, it had ended on its own (it
		// acknowledges before it runs anything, and sshd passes on what it
		// wrote before it ended): the command did not run. Else the
		// connection was lost, and the acknowledgement may be what was.
		select {
		case <-sh.ended:
		case <-ctx.Done():
			w.cut()
			return ctx.Err()
		}
		var exit *ssh.ExitError
		if sh.exit == nil || errors.As(sh.exit, &exit) {
			tflog.Debug(ctx, "the shell had ended before it took the command", map[string]any{"host": s.cfg.Name, "exit": fmt.Sprint(sh.exit)})
			return errNotRun
		}
		return fmt.Errorf("the connection ended before the shell acknowledged the command, which may have started: %w", s.lost(sh.client, err))
	case <-ctx.Done():
		sh.kill(w)
		return ctx.Err()
	}
	var err error
	for _, ended := range []chan error{done, errDone} {
		select {
		case err = <-ended:
		case <-ctx.Done():
			sh.kill(w)
			return ctx.Err()
		}
		if err != nil {
			break
		}
	}
	if err != nil {
		w.cut()
		return fmt.Errorf("command did not complete: %w", s.lost(sh.client, err))
	}
	if rc := <-rcs; rc != 0 {
		return &CommandError{Host: s.cfg.Name, Script: script, ExitCode: rc, Stderr: stderr.String()}
	}
	return nil
}

// kill ends the command running in sh: closing the session ends the
// shell's input, and its watcher kills the command (shellScript). w is cut.
func (sh *shell) kill(w *outWriter) {
	sh.close()
	w.cut()
}

// outWriter passes a command's output to w until cut. A write that fails
// is remembered and the rest discarded, so that the output is still read
// to its end and the shell stays in step for the next command.
type outWriter struct {
	mu  sync.Mutex
	w   io.Writer // nil once cut
	err error
}

func (o *outWriter) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.w != nil && o.err == nil {
		if _, err := o.w.Write(p); err != nil {
			o.err = err
		}
	}
	return len(p), nil
}

// cut returns once w is written no more.
func (o *outWriter) cut() {
	o.mu.Lock()
	o.w = nil
	o.mu.Unlock()
}

func (o *outWriter) error() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// copyUntil copies r to w up to the first occurrence of mark, which it
// consumes and does not copy; nothing after the mark is read. It returns
// io.ErrUnexpectedEOF when r ends first.
func copyUntil(w io.Writer, r *bufio.Reader, mark []byte) error {
	var pending []byte // consumed but not written: shorter than mark, may begin it
	for {
		if _, err := r.Peek(1); err != nil {
			if errors.Is(err, io.EOF) {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		buf, _ := r.Peek(r.Buffered())
		joined := append(pending, buf...)
		if i := bytes.Index(joined, mark); i >= 0 {
			_, _ = r.Discard(i + len(mark) - len(pending))
			_, err := w.Write(joined[:i])
			return err
		}
		_, _ = r.Discard(len(buf))
		// Held back: only an end that may begin the mark, so that output
		// reaches the caller as it comes (a command's progress, up to its
		// last line, even when the command is then cut short).
		keep := min(len(joined), len(mark)-1)
		for keep > 0 && !bytes.HasPrefix(mark, joined[len(joined)-keep:]) {
			keep--
		}
		if _, err := w.Write(joined[:len(joined)-keep]); err != nil {
			return err
		}
		pending = append(pending[:0], joined[len(joined)-keep:]...)
	}
}
