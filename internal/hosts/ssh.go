package hosts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// DefaultMaxSessions caps concurrent sessions per connection. OpenSSH's
// default MaxSessions is 10; staying below it leaves room for the reconnect
// probe and for an operator's own session multiplexed over a ControlMaster.
const DefaultMaxSessions = 8

// DefaultDialTimeout bounds a connect: the TCP connection, the SSH
// handshake and every bastion hop, under one deadline.
const DefaultDialTimeout = 20 * time.Second

// A connection whose server processes are gone while its TCP connection
// stays open answers nothing, and x/crypto/ssh waits for answers (a
// session, a command's start, its output) without a context. So each
// pooled connection is probed every keepAliveInterval (keepAlive), and one
// that has not answered a probe within keepAliveTimeout is closed, as
// Terraform's own SSH communicator does: that ends every wait on it, and
// the next command redials. No call needs a watchdog of its own, and a
// slow answer on a live connection (a loaded host) is never mistaken for a
// dead one. Variables for tests.
var (
	keepAliveInterval = 5 * time.Second
	keepAliveTimeout  = 20 * time.Second
)

// refusalRetryFor bounds how long a refused session is asked for again
// (whileRefused).
const refusalRetryFor = 30 * time.Second

// SSHConfig says how to reach and authenticate to one host.
type SSHConfig struct {
	Name    string // the provider's host name, for diagnostics
	Address string // host:port
	User    string

	PrivateKey            []byte // PEM, optional
	UseAgent              bool
	KnownHostsFile        string // used when HostKey is empty
	HostKey               string // pinned public key, authorized_keys format
	InsecureIgnoreHostKey bool

	Bastion *SSHConfig // optional jump host

	DialTimeout time.Duration // 0 means DefaultDialTimeout
	MaxSessions int           // 0 means DefaultMaxSessions
}

// SSH is a Transport over one pooled *ssh.Client. The client is dialled on
// first use and shared by every caller; sessions are multiplexed over it and
// capped at MaxSessions. A dead connection is redialled once per call.
type SSH struct {
	cfg SSHConfig
	// sem holds one token per session channel open on the connection: one
	// per running command, plus one for the sftp channel (sftp.go) for as
	// long as that is open. sshd counts an sftp subsystem against
	// MaxSessions exactly like a command, so it must take a token too: were
	// it left out, MaxSessions commands plus the sftp channel would be one
	// session more than the cap promises, and with a cap equal to the
	// server's the last command would be refused instead of queued. The
	// token is taken before a channel is opened and given back only after it
	// is closed, so the count never undershoots what the server sees.
	sem chan struct{}

	mu      sync.Mutex
	client  *ssh.Client
	ended   chan struct{} // closed once client's connection has ended (see gone)
	closers []io.Closer   // bastion client(s) under client
	// silent is the last connection closed for not answering keepalives,
	// so that the errors of the calls it ended say why.
	silent *ssh.Client
	sftp   *sftpState // the sftp channel on client, or the host's refusal of it; nil when not tried yet

	// sftpOpening is a lock (capacity 1) that callers can give up on when
	// their context ends: one opener at a time, so a connection carries at
	// most one sftp channel.
	sftpOpening chan struct{}
	// dialing is a lock (capacity 1) held through a dial (connected);
	// closes counts Close calls (under mu), so a dial that a Close
	// overtook does not pool its connection.
	dialing chan struct{}
	closes  int
	// dialsFailed counts the dials that failed (under mu), dialErr the
	// last one's error: whoever waited for that dial gets it (connected).
	dialsFailed int
	dialErr     error
	sftpWrites  atomic.Int64 // files written through sftp, for tests
	shellWrites atomic.Int64 // small files written through an idle shell (WriteSmallFile), for tests

	// Shells (shell.go) waiting for a command, each holding a session
	// token; under mu. idleReady is signalled when one is put back, for
	// whoever waits for a shell (shellFor) or a token (acquire).
	idle      []*shell
	idleReady chan struct{}
	// starting holds a token per shell being started (maxShellStarts).
	starting chan struct{}
	// warming is closed when the warm-up under way (Warm) ends; nil when
	// none is; under mu.
	warming chan struct{}
	// noShells is set when a host could not start a shell: its commands
	// get sessions of their own from then on.
	noShells atomic.Bool
	// keepAliveInterval and keepAliveTimeout as they were when made.
	keepAliveEvery, keepAliveWithin time.Duration
	shellsStarted                   atomic.Int64 // for tests
	startsInFlight, startsMost      atomic.Int64 // shells being started, now and at most; for tests
	sessionsRun                     atomic.Int64 // commands run in a session of their own, for tests
}

var _ Transport = (*SSH)(nil)

// NewSSH validates cfg (keys are parsed now, so a bad key is reported before
// any connection is tried) and returns an unconnected transport.
func NewSSH(cfg SSHConfig) (*SSH, error) {
	if _, _, err := clientConfig(cfg); err != nil {
		return nil, err
	}
	n := cfg.MaxSessions
	if n <= 0 {
		n = DefaultMaxSessions
	}
	return &SSH{cfg: cfg, sem: make(chan struct{}, n), sftpOpening: make(chan struct{}, 1), dialing: make(chan struct{}, 1), idleReady: make(chan struct{}, 1),
		starting:       make(chan struct{}, maxShellStarts),
		keepAliveEvery: keepAliveInterval, keepAliveWithin: keepAliveTimeout}, nil
}

func (s *SSH) Host() string { return s.cfg.Name }

// Close closes the pooled connection, if any, and one being dialled once
// its dial ends. A later command dials again.
func (s *SSH) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closes++
	s.dropLocked()
	return nil
}

func (s *SSH) dropLocked() {
	if s.client != nil {
		_ = s.client.Close()
		s.client, s.ended = nil, nil
	}
	// The sftp channel ends with its connection; its watcher (openSFTP)
	// gives its session token back. A host that refused sftp is asked again
	// on the next connection: it may have been reconfigured meanwhile.
	s.sftp = nil
	// Idle shells end with their connection; their tokens are free again.
	for _, sh := range s.idle {
		sh.close()
	}
	s.idle = nil
	closeAll(s.closers)
	s.closers = nil
}

// keepAlive probes client until it is closed, and closes it when a probe
// goes unanswered for keepAliveTimeout (see keepAliveInterval). Any reply,
// even a refusal, is an answer.
func (s *SSH) keepAlive(ctx context.Context, client *ssh.Client, ended <-chan struct{}, active *activeConn) {
	for {
		reply := make(chan error, 1)
		go func() {
			_, _, err := client.SendRequest("keepalive@openssh.com", true, nil)
			reply <- err
		}()
		if !s.answered(ctx, client, reply, active) {
			return
		}
		select {
		case <-time.After(s.keepAliveEvery):
		case <-ended:
			return
		}
	}
}

// answered waits for a keepalive's reply, and closes client when none
// comes within keepAliveTimeout while no byte moves on the connection
// either. false: the connection is closed (here, or before).
func (s *SSH) answered(ctx context.Context, client *ssh.Client, reply <-chan error, active *activeConn) bool {
	timer := time.NewTimer(s.keepAliveWithin)
	defer timer.Stop()
	for {
		select {
		case err := <-reply:
			return err == nil
		case <-timer.C:
			if active.aliveWithin(s.keepAliveWithin) {
				// Unanswered, but the link carries data: the request
				// waits behind what was queued ahead of it.
				timer.Reset(s.keepAliveWithin)
				continue
			}
			tflog.Debug(ctx, "the SSH connection did not answer a keepalive: closing it; the next command redials", map[string]any{
				"host": s.cfg.Name, "address": s.cfg.Address, "timeout": s.keepAliveWithin.String(),
			})
			s.mu.Lock()
			s.silent = client
			if s.client == client {
				s.dropLocked()
			}
			s.mu.Unlock()
			_ = client.Close() // given up earlier already (redialled): ends its calls too
			return false
		}
	}
}

// lost explains err, a call's failure on client, when keepAlive closed
// client for not answering.
func (s *SSH) lost(client *ssh.Client, err error) error {
	s.mu.Lock()
	silent := s.silent == client
	s.mu.Unlock()
	if silent {
		return fmt.Errorf("the connection did not answer a keepalive in %s (%w)", s.keepAliveWithin, err)
	}
	return err
}

// connected returns the pooled client, dialling it if needed. Callers that
// find it dead pass it back as stale so that only one of them redials. One
// dial at a time (dialing), outside mu: a dial takes up to its timeout (a
// bastion's included), and mu guards what idle shells, keepalives and
// writes need meanwhile; a caller waiting for another's dial gives up when
// its context ends.
func (s *SSH) connected(ctx context.Context, stale *ssh.Client) (*ssh.Client, error) {
	failed := s.dialFailures()
	if c := s.pooled(stale); c != nil {
		return c, nil
	}
	select {
	case s.dialing <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-s.dialing }()
	s.mu.Lock()
	if s.client != nil && s.client != stale { // dialled while this caller waited
		c := s.client
		s.mu.Unlock()
		return c, nil
	}
	if err := s.failedSinceLocked(failed); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	if stale != nil {
		tflog.Debug(ctx, "redialling: the pooled SSH connection is gone", map[string]any{"host": s.cfg.Name, "address": s.cfg.Address})
	}
	s.dropLocked()
	closes := s.closes
	s.mu.Unlock()
	client, closers, active, err := dial(ctx, s.cfg)
	if err != nil {
		if ctx.Err() == nil { // the host's answer, not this caller giving up
			s.mu.Lock()
			s.dialsFailed, s.dialErr = s.dialsFailed+1, err
			s.mu.Unlock()
		}
		return nil, err
	}
	s.mu.Lock()
	if s.closes != closes { // Close ran meanwhile: this connection is not pooled
		s.mu.Unlock()
		_ = client.Close()
		closeAll(closers)
		return nil, fmt.Errorf("host %q (%s): the transport was closed while connecting: %w", s.cfg.Name, s.cfg.Address, errConnectionEnded)
	}
	ended := make(chan struct{})
	go func() {
		_ = client.Wait()
		close(ended)
	}()
	s.client, s.ended, s.closers = client, ended, closers
	s.mu.Unlock()
	go s.keepAlive(context.WithoutCancel(ctx), client, ended, active)
	return client, nil
}

// dialFailures is how many dials have failed so far.
func (s *SSH) dialFailures() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dialsFailed
}

// failedSince is the last dial's error when a dial failed after
// dialFailures said n: the dial a caller waited for failed (a warm-up's,
// or another command's), which is its answer too rather than a dial of its
// own after it, which would double the wait for a host that is down.
func (s *SSH) failedSince(n int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failedSinceLocked(n)
}

func (s *SSH) failedSinceLocked(n int) error {
	if s.dialsFailed != n {
		return s.dialErr
	}
	return nil
}

// pooled is the pooled client unless it is stale or there is none.
func (s *SSH) pooled(stale *ssh.Client) *ssh.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client != nil && s.client != stale {
		return s.client
	}
	return nil
}

// gone returns a channel closed once client's connection has ended. A
// connection no longer pooled has been closed (dropLocked): its channel is
// one closed already.
func (s *SSH) gone(client *ssh.Client) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if client == s.client && s.ended != nil {
		return s.ended
	}
	return closedChan
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// errConnectionEnded is the error of a channel open that the connection's
// end interrupted: a dead connection, worth a redial.
var errConnectionEnded = fmt.Errorf("the SSH connection ended: %w", io.EOF)

// withContext returns call's result, or ctx's error as soon as ctx ends:
// x/crypto/ssh's calls take no context (a dead connection ends them: see
// keepAlive). A result that arrives after ctx ended is passed to unused.
//
// A call that opens a channel also passes gone (else nil), its
// connection's: the call then ends with errConnectionEnded when the
// connection ends first. That is not redundant: x/crypto/ssh registers a
// channel being opened in a list that its reader empties (closing each)
// when the connection ends; one registered after that, in the moment before
// the reader closes the socket, is written out and then waits for an answer
// forever, as nothing will ever close it (so does the goroutine here that
// called it: one per occurrence, which only x/crypto/ssh could free).
func withContext[T any](ctx context.Context, gone <-chan struct{}, call func() (T, error), unused func(T)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := call()
		ch <- result{v, err}
	}()
	var err error
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		err = ctx.Err()
	case <-gone:
		select {
		case r := <-ch: // answered as the connection ended: the answer stands
			return r.v, r.err
		default:
		}
		err = errConnectionEnded
	}
	go func() {
		if r := <-ch; r.err == nil {
			unused(r.v)
		}
	}()
	var zero T
	return zero, err
}

// Run runs script with `sh -c` on the host: in an idle shell when it has no
// standard input (shell.go), else in a session of its own.
func (s *SSH) Run(ctx context.Context, script string, stdin io.Reader, stdout io.Writer) error {
	if stdout == nil {
		stdout = io.Discard
	}
	if stdin == nil && len(script) <= shellScriptMax && !s.noShells.Load() {
		err := s.runShell(ctx, script, stdout)
		if !errors.Is(err, errNotRun) {
			return err
		}
		// No shell took the command (none could start, or the one it was
		// sent to had ended): it runs in a session of its own.
		tflog.Debug(ctx, "no shell took the command: it runs in a session of its own", map[string]any{
			"host": s.cfg.Name, "error": err.Error(),
		})
	}
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer func() { <-s.sem }()
	session, client, err := s.newSession(ctx)
	if err != nil {
		return err
	}
	// Closed after its command ended (or was killed and closed below): an
	// error (io.EOF once closed) says nothing about the command.
	defer func() { _ = session.Close() }()
	s.sessionsRun.Add(1)

	session.Stdout = stdout
	stderr := &tailBuffer{n: stderrTailBytes}
	session.Stderr = stderr
	// The login shell may be anything; run the script under sh explicitly.
	// A script may hold content (a rendered compose file): it is never on
	// the session's command line, which any user of the host can read.
	// The script ends with a mark the runner checks: a script cut short
	// (the session gone mid-way) is never run.
	mark := string(NewMark())
	sent := script + "\n#" + mark
	cmd := Command("sh", "-c", sessionScript, "sh", strconv.Itoa(len(sent)), mark)
	var in io.WriteCloser
	if stdin == nil {
		// The script, then the input held open and unused, so that its end
		// means the session ended: a watcher then kills the command with
		// the session's process group, as in a shell (OpenSSH refuses
		// signal requests).
		if in, err = session.StdinPipe(); err != nil {
			return err
		}
		defer func() { _ = in.Close() }()
	} else {
		// The script, then the command's input.
		cmd = Command("sh", "-c", stdinScriptRunner, "sh", strconv.Itoa(len(sent)), mark)
		session.Stdin = io.MultiReader(strings.NewReader(sent), stdin)
	}
	if err := s.start(ctx, client, session, cmd); err != nil {
		return err
	}
	if in != nil {
		// Only once the command runs: a server may drop what a session
		// receives before (Dropbear does).
		go func() { _, _ = io.WriteString(in, sent) }() // fails only once the session has ended
	}
	done := make(chan error, 1)
	go func() { done <- session.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		// Servers that honour signal requests kill the command; OpenSSH
		// refuses them, and the command ends when it next reads or writes
		// its closed input or output (in a shell it is killed: shell.go).
		_ = session.Signal(ssh.SIGKILL)
		_ = session.Close()
		// Given up: how its Wait ends says nothing more. A host that does
		// not answer the close ends the wait by keepAlive.
		<-done //nolint:errcheck // see above
		return ctx.Err()
	}
	if err == nil {
		return nil
	}
	var exitErr *ssh.ExitError
	if errors.As(err, &exitErr) {
		return &CommandError{Host: s.cfg.Name, Script: script, ExitCode: exitErr.ExitStatus(), Stderr: stderr.String()}
	}
	return fmt.Errorf("host %q (%s): command did not complete: %w", s.cfg.Name, s.cfg.Address, s.lost(client, err))
}

// sessionScript runs the script the session's input starts with (its
// first $1 bytes, read by head, which reads no further: the client sends
// nothing more; they end with "#" and the mark $2, checked, so that a
// script cut short is never run) as a shell runs a command (shellScript), with one watcher
// on the rest of the input for its whole life. The "." keeps the script's
// trailing newlines from the command substitution.
const sessionScript = `exec 3<&0
_sbx_s=$(head -c "$1"; echo .)
_sbx_s=${_sbx_s%.}
case $_sbx_s in *"
#$2") ;; *) echo "sandboxer: the script arrived cut short" >&2; exit 125 ;; esac
_sbx_s=${_sbx_s%"#$2"}
{ IFS= read -r _sbx_l; kill -s KILL 0; } <&3 &
_sbx_w=$!
( unset _sbx_l _sbx_w; set --; eval "$_sbx_s" ) </dev/null 3<&-
_sbx_r=$?
kill "$_sbx_w" 2>/dev/null
wait "$_sbx_w" 2>/dev/null
exit "$_sbx_r"`

// stdinScriptRunner runs the script the session's input starts with (its
// first $1 bytes) with the rest of the input as the command's. dd reads
// the script a byte at a time, so that nothing of the command's input is
// read with it (head may read ahead: busybox's does); the scripts with
// input are short, their content on the input.
const stdinScriptRunner = `_sbx_s=$(dd bs=1 count="$1" 2>/dev/null; echo .)
_sbx_s=${_sbx_s%.}
case $_sbx_s in *"
#$2") ;; *) echo "sandboxer: the script arrived cut short" >&2; exit 125 ;; esac
_sbx_s=${_sbx_s%"#$2"}
set --
eval "$_sbx_s"`

// acquire takes a session token (see SSH.sem): a free one, else an idle
// shell's (closing the shell), else it waits for either.
func (s *SSH) acquire(ctx context.Context) error {
	for {
		select {
		case s.sem <- struct{}{}:
			return nil
		default:
		}
		if sh := s.takeIdle(); sh != nil {
			tflog.Debug(ctx, "closing an idle shell to take its session token", map[string]any{"host": s.cfg.Name})
			return sh.closeForToken(ctx)
		}
		select {
		case s.sem <- struct{}{}:
			return nil
		case <-s.idleReady:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// newSession opens a session on the pooled connection, redialling once
// when the connection turns out dead. The caller holds a token.
func (s *SSH) newSession(ctx context.Context) (*ssh.Session, *ssh.Client, error) {
	client, err := s.connected(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	session, err := s.openSessionUntilAccepted(ctx, client)
	var refused *ssh.OpenChannelError
	if err != nil && !errors.As(err, &refused) && ctx.Err() == nil {
		// The pooled connection died (host rebooted, idle timeout): redial once.
		stale := client
		if client, err = s.connected(ctx, client); err != nil {
			return nil, nil, err
		}
		if session, err = s.openSessionUntilAccepted(ctx, client); err != nil {
			err = s.lost(stale, err)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		if errors.As(err, &refused) {
			return nil, nil, fmt.Errorf("host %q (%s): the host refused a session for %s (%w): its sshd's MaxSessions may be below %d, the sessions the provider opens at once on a connection",
				s.cfg.Name, s.cfg.Address, refusalRetryFor, err, cap(s.sem))
		}
		return nil, nil, fmt.Errorf("host %q (%s): unable to open SSH session: %w", s.cfg.Name, s.cfg.Address, s.lost(client, err))
	}
	return session, client, nil
}

// openSessionUntilAccepted opens a session on client, giving up when ctx
// ends, and asking again while the host refuses (whileRefused).
func (s *SSH) openSessionUntilAccepted(ctx context.Context, client *ssh.Client) (*ssh.Session, error) {
	return whileRefused(ctx, s.closeIdleShell, func() (*ssh.Session, error) {
		return withContext(ctx, s.gone(client), client.NewSession, func(session *ssh.Session) { _ = session.Close() })
	})
}

// closeIdleShell closes one idle shell, if any: a host that refuses
// sessions below the provider's cap may be full of the provider's own idle
// shells, which nobody else closes while the provider has tokens to spare.
func (s *SSH) closeIdleShell() {
	if sh := s.takeIdle(); sh != nil {
		sh.close()
	}
}

// whileRefused calls open again while the host refuses the channel it
// opens, for up to refusalRetryFor. A refusal is an answer: the connection is
// alive, and dropping it would end every command running on it. sshd
// refuses a session over its MaxSessions ("no more sessions"), and it
// counts a closed session until that session's processes have exited and
// been reaped, a moment after its channel closed; a host whose MaxSessions
// is below the provider's cap refuses until one of the provider's own
// sessions ends; refused is called at each refusal, to end one.
func whileRefused[T any](ctx context.Context, refused func(), open func() (T, error)) (T, error) {
	deadline := time.Now().Add(refusalRetryFor)
	wait := 5 * time.Millisecond
	for {
		v, err := open()
		var refusal *ssh.OpenChannelError
		if !errors.As(err, &refusal) || time.Now().Add(wait).After(deadline) {
			return v, err
		}
		tflog.Debug(ctx, "the host refused a session: asking again", map[string]any{"reason": refusal.Error(), "wait": wait.String()})
		refused()
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return v, ctx.Err()
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// start starts cmd in session, giving up when ctx ends (the caller's Close
// ends the session, started or not).
func (s *SSH) start(ctx context.Context, client *ssh.Client, session *ssh.Session, cmd string) error {
	_, err := withContext(ctx, nil, func() (struct{}, error) { return struct{}{}, session.Start(cmd) }, func(struct{}) {})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("host %q (%s): unable to start command: %w", s.cfg.Name, s.cfg.Address, s.lost(client, err))
	}
	return err
}

// dial connects to cfg.Address, through cfg.Bastion when set, within
// cfg.DialTimeout for the whole: TCP, handshake and every bastion hop. It
// returns the client and the bastion clients beneath it, outermost last.
func dial(ctx context.Context, cfg SSHConfig) (*ssh.Client, []io.Closer, *activeConn, error) {
	timeout := cfg.DialTimeout
	if timeout <= 0 {
		timeout = DefaultDialTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client, closers, active, err := dialWithin(ctx, cfg)
	if err != nil && errors.Is(err, context.DeadlineExceeded) {
		return nil, nil, nil, fmt.Errorf("host %q: unable to connect to %s within %s: %w", cfg.Name, cfg.Address, timeout, err)
	}
	return client, closers, active, err
}

// dialWithin is dial under ctx's deadline.
func dialWithin(ctx context.Context, cfg SSHConfig) (*ssh.Client, []io.Closer, *activeConn, error) {
	ccfg, agentSock, err := clientConfig(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	// The agent signs during the handshake only: its socket is closed when
	// dial returns, not left open for the life of the process.
	defer agentSock.close()
	var (
		conn    net.Conn
		closers []io.Closer
	)
	if cfg.Bastion != nil {
		b := *cfg.Bastion
		if b.Name == "" {
			b.Name = cfg.Name + " (bastion)"
		}
		bc, bclosers, _, err := dialWithin(ctx, b)
		if err != nil {
			return nil, nil, nil, err
		}
		closers = append(bclosers, bc)
		conn, err = bc.DialContext(ctx, "tcp", cfg.Address)
		if err != nil {
			closeAll(closers)
			return nil, nil, nil, fmt.Errorf("host %q: unable to reach %s through bastion %s: %w", cfg.Name, cfg.Address, b.Address, err)
		}
	} else {
		var d net.Dialer
		conn, err = d.DialContext(ctx, "tcp", cfg.Address)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("host %q: unable to connect to %s: %w", cfg.Name, cfg.Address, err)
		}
	}

	active := &activeConn{Conn: conn}
	conn = active
	// The handshake takes no context (ClientConfig.Timeout bounds only a
	// dial that ssh.Dial makes): closing the connection ends it.
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	c, chans, reqs, err := ssh.NewClientConn(conn, cfg.Address, ccfg)
	if !stop() || err != nil {
		_ = conn.Close()
		closeAll(closers)
		if ctx.Err() != nil {
			return nil, nil, nil, fmt.Errorf("host %q: SSH handshake with %s: %w", cfg.Name, cfg.Address, ctx.Err())
		}
		return nil, nil, nil, fmt.Errorf("host %q: SSH handshake with %s failed: %w", cfg.Name, cfg.Address, err)
	}
	return ssh.NewClient(c, chans, reqs), closers, active, nil
}

// activeConn is a connection that notes when bytes last moved on it, each
// way. keepAlive takes the peer's bytes as life: on a link a transfer
// saturates, a keepalive waits behind the data queued ahead of it
// (megabytes: the channel's window) for longer than its timeout, while the
// link is well.
type activeConn struct {
	net.Conn
	read, wrote atomic.Int64 // unix nanoseconds of the last bytes each way
}

func (c *activeConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.read.Store(time.Now().UnixNano())
	}
	return n, err
}

func (c *activeConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.wrote.Store(time.Now().UnixNano())
	}
	return n, err
}

// aliveWithin reports whether the connection showed life within d: the
// peer sent bytes; or, on one that wrote within busyLife times d (a
// transfer, whose data may still queue ahead of the keepalive), the peer
// sent bytes within that long. A peer taking a stream adjusts its window
// only every so many kilobytes it consumed (OpenSSH: a megabyte), which on
// a slow link takes longer than d. Only the peer's bytes count: a middle
// box that takes data and drops it (TCP acknowledges it) is no sign of an
// sshd.
func (c *activeConn) aliveWithin(d time.Duration) bool {
	since := func(t *atomic.Int64) time.Duration { return time.Since(time.Unix(0, t.Load())) }
	busy := busyLife * d
	return since(&c.read) < d || since(&c.wrote) < busy && since(&c.read) < busy
}

// busyLife bounds, in keepalive timeouts, how long a connection that wrote
// may go without a byte from its peer (a minute: a megabyte's window
// adjustment on a 17 KB/s link), and so how long a connection that died
// during a transfer takes to be given up.
const busyLife = 3

func closeAll(cs []io.Closer) {
	for i := len(cs) - 1; i >= 0; i-- {
		_ = cs[i].Close()
	}
}

// clientConfig builds the handshake's configuration. With use_agent, the
// returned agentConn opens the agent's socket when the handshake asks for
// signers; the caller closes it once the handshake is over.
func clientConfig(cfg SSHConfig) (*ssh.ClientConfig, *agentConn, error) {
	if cfg.Address == "" {
		return nil, nil, fmt.Errorf("host %q: address is required for an SSH host", cfg.Name)
	}
	if _, _, err := net.SplitHostPort(cfg.Address); err != nil {
		return nil, nil, fmt.Errorf("host %q: address %q must be host:port: %w", cfg.Name, cfg.Address, err)
	}
	if cfg.User == "" {
		return nil, nil, fmt.Errorf("host %q: user is required for an SSH host", cfg.Name)
	}
	var auths []ssh.AuthMethod
	if len(cfg.PrivateKey) > 0 {
		signer, err := ssh.ParsePrivateKey(cfg.PrivateKey)
		if err != nil {
			return nil, nil, fmt.Errorf("host %q: unable to parse private key: %w", cfg.Name, err)
		}
		auths = append(auths, ssh.PublicKeys(signer))
	}
	sock := &agentConn{}
	if cfg.UseAgent {
		auths = append(auths, ssh.PublicKeysCallback(sock.signers))
	}
	if len(auths) == 0 {
		return nil, nil, fmt.Errorf("host %q: no authentication configured: set private_key, private_key_file or use_agent", cfg.Name)
	}
	hostKeyCallback, algorithms, err := hostKeyVerifier(cfg)
	if err != nil {
		return nil, nil, err
	}
	return &ssh.ClientConfig{
		User:              cfg.User,
		Auth:              auths,
		HostKeyCallback:   hostKeyCallback,
		HostKeyAlgorithms: algorithms,
	}, sock, nil
}

// agentConn is one handshake's connection to the SSH agent.
type agentConn struct {
	mu   sync.Mutex
	conn net.Conn
}

func (a *agentConn) signers() ([]ssh.Signer, error) {
	sock := os.Getenv("SSH_AUTH_SOCK")
	if sock == "" {
		return nil, errors.New("use_agent is set but SSH_AUTH_SOCK is empty")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.conn == nil {
		conn, err := net.Dial("unix", sock)
		if err != nil {
			return nil, fmt.Errorf("unable to reach the SSH agent at %s: %w", sock, err)
		}
		a.conn = conn
	}
	return agent.NewClient(a.conn).Signers()
}

// close closes the agent connection, if the handshake opened one.
func (a *agentConn) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.conn != nil {
		_ = a.conn.Close()
		a.conn = nil
	}
}
