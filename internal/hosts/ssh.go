package hosts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// DefaultMaxSessions caps concurrent sessions per connection. OpenSSH's
// default MaxSessions is 10; staying below it leaves room for the reconnect
// probe and for an operator's own session multiplexed over a ControlMaster.
const DefaultMaxSessions = 8

// DefaultDialTimeout bounds TCP connect plus SSH handshake.
const DefaultDialTimeout = 20 * time.Second

// answerTimeout bounds how long the host may take to answer a session
// request, or to acknowledge a killed command. A connection whose server
// processes are gone while its TCP connection stays open answers nothing,
// and x/crypto/ssh waits for those answers without a context: past this,
// the connection is taken for dead and closed, which ends every wait on it,
// and the next command redials. A variable for tests.
var answerTimeout = 30 * time.Second

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
	closers []io.Closer // bastion client(s) under client
	sftp    *sftpState  // the sftp channel on client, or the host's refusal of it; nil when not tried yet

	// sftpOpening is a lock (capacity 1) that callers can give up on when
	// their context ends: one opener at a time, so a connection carries at
	// most one sftp channel.
	sftpOpening chan struct{}
	sftpWrites  atomic.Int64 // files written through sftp, for tests

	// Shells (shell.go) waiting for a command, each holding a session
	// token; under mu. idleReady is signalled when one is put back, for
	// whoever waits for a shell (shellFor) or a token (acquire).
	idle      []*shell
	idleReady chan struct{}
	// noShells is set when a host could not start a shell: its commands
	// get sessions of their own from then on.
	noShells      atomic.Bool
	shellsStarted atomic.Int64 // for tests
	sessionsRun   atomic.Int64 // commands run in a session of their own, for tests
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
	return &SSH{cfg: cfg, sem: make(chan struct{}, n), sftpOpening: make(chan struct{}, 1), idleReady: make(chan struct{}, 1)}, nil
}

func (s *SSH) Host() string { return s.cfg.Name }

// Close closes the pooled connection, if any.
func (s *SSH) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropLocked()
	return nil
}

func (s *SSH) dropLocked() {
	if s.client != nil {
		_ = s.client.Close()
		s.client = nil
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
	for i := len(s.closers) - 1; i >= 0; i-- {
		_ = s.closers[i].Close()
	}
	s.closers = nil
}

// drop closes client if it is still the pooled one: it stopped answering.
func (s *SSH) drop(client *ssh.Client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client == client {
		s.dropLocked()
	}
}

// openSession opens a session on client, giving up when ctx ends or when
// the host has not answered within answerTimeout (then the connection is
// dropped: see answerTimeout).
func (s *SSH) openSession(ctx context.Context, client *ssh.Client) (*ssh.Session, error) {
	type opened struct {
		session *ssh.Session
		err     error
	}
	ch := make(chan opened, 1)
	go func() {
		session, err := client.NewSession()
		ch <- opened{session, err}
	}()
	timer := time.NewTimer(answerTimeout)
	defer timer.Stop()
	var err error
	select {
	case o := <-ch:
		return o.session, o.err
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		s.drop(client)
		err = fmt.Errorf("the connection did not answer a session request in %s", answerTimeout)
	}
	// A session that opens after all is closed unused.
	go func() {
		if o := <-ch; o.session != nil {
			_ = o.session.Close()
		}
	}()
	return nil, err
}

// connected returns the pooled client, dialling it if needed. Callers that
// find it dead pass it back as stale so that only one of them redials.
func (s *SSH) connected(ctx context.Context, stale *ssh.Client) (*ssh.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client != nil && s.client != stale {
		return s.client, nil
	}
	s.dropLocked()
	client, closers, err := dial(ctx, s.cfg)
	if err != nil {
		return nil, err
	}
	s.client, s.closers = client, closers
	return client, nil
}

// Run runs script with `sh -c` on the host: in an idle shell when it has no
// standard input (shell.go), else in a session of its own.
func (s *SSH) Run(ctx context.Context, script string, stdin io.Reader, stdout io.Writer) error {
	if stdout == nil {
		stdout = io.Discard
	}
	if stdin == nil && len(script) <= shellScriptMax && !s.noShells.Load() {
		if err := s.runShell(ctx, script, stdout); !errors.Is(err, errNotRun) {
			return err
		}
		// No shell took the command (none could start, or the one it was
		// sent to had ended): it runs in a session of its own.
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

	session.Stdin = stdin
	session.Stdout = stdout
	stderr := &tailBuffer{n: stderrTailBytes}
	session.Stderr = stderr

	// The login shell may be anything; run the script under sh explicitly.
	if err := s.start(ctx, client, session, Command("sh", "-c", script)); err != nil {
		return err
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
		// Given up: how its Wait ends says nothing more.
		select {
		case <-done: //nolint:errcheck // see above
		case <-time.After(answerTimeout):
			s.drop(client) // no answer to the close: dead; closing it ends the Wait
			<-done         //nolint:errcheck // see above
		}
		return ctx.Err()
	}
	if err == nil {
		return nil
	}
	var exitErr *ssh.ExitError
	if errors.As(err, &exitErr) {
		return &CommandError{Host: s.cfg.Name, Script: script, ExitCode: exitErr.ExitStatus(), Stderr: stderr.String()}
	}
	return fmt.Errorf("host %q (%s): command did not complete: %w", s.cfg.Name, s.cfg.Address, err)
}

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
			sh.closeKeepToken()
			return nil
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
	session, err := s.openRefused(ctx, client)
	var refused *ssh.OpenChannelError
	if err != nil && !errors.As(err, &refused) && ctx.Err() == nil {
		// The pooled connection died (host rebooted, idle timeout): redial once.
		if client, err = s.connected(ctx, client); err != nil {
			return nil, nil, err
		}
		session, err = s.openRefused(ctx, client)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		if errors.As(err, &refused) {
			return nil, nil, fmt.Errorf("host %q (%s): the host refused a session for %s (%w): its sshd's MaxSessions may be below %d, the sessions the provider opens at once on a connection",
				s.cfg.Name, s.cfg.Address, answerTimeout, err, cap(s.sem))
		}
		return nil, nil, fmt.Errorf("host %q (%s): unable to open SSH session: %w", s.cfg.Name, s.cfg.Address, err)
	}
	return session, client, nil
}

// openRefused is openSession, asking again while the host refuses.
func (s *SSH) openRefused(ctx context.Context, client *ssh.Client) (*ssh.Session, error) {
	return whileRefused(ctx, s.closeIdleShell, func() (*ssh.Session, error) { return s.openSession(ctx, client) })
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
// opens, for up to answerTimeout. A refusal is an answer: the connection is
// alive, and dropping it would end every command running on it. sshd
// refuses a session over its MaxSessions ("no more sessions"), and it
// counts a closed session until that session's processes have exited and
// been reaped, a moment after its channel closed; a host whose MaxSessions
// is below the provider's cap refuses until one of the provider's own
// sessions ends; refused is called at each refusal, to end one.
func whileRefused[T any](ctx context.Context, refused func(), open func() (T, error)) (T, error) {
	deadline := time.Now().Add(answerTimeout)
	wait := 5 * time.Millisecond
	for {
		v, err := open()
		var refusal *ssh.OpenChannelError
		if !errors.As(err, &refusal) || time.Now().Add(wait).After(deadline) {
			return v, err
		}
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

// start starts cmd in session, giving up when ctx ends or the host does not
// answer within answerTimeout (then the connection is dropped).
func (s *SSH) start(ctx context.Context, client *ssh.Client, session *ssh.Session, cmd string) error {
	start := make(chan error, 1)
	go func() { start <- session.Start(cmd) }()
	var err error
	select {
	case err = <-start:
	case <-ctx.Done():
		return ctx.Err() // the caller's Close ends the session, started or not
	case <-time.After(answerTimeout):
		s.drop(client)
		err = fmt.Errorf("the connection did not answer in %s", answerTimeout)
	}
	if err != nil {
		return fmt.Errorf("host %q (%s): unable to start command: %w", s.cfg.Name, s.cfg.Address, err)
	}
	return nil
}

// dial connects to cfg.Address, through cfg.Bastion when set. It returns the
// client and the bastion clients beneath it, outermost last.
func dial(ctx context.Context, cfg SSHConfig) (*ssh.Client, []io.Closer, error) {
	ccfg, agentSock, err := clientConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	// The agent signs during the handshake only: its socket is closed when
	// dial returns, not left open for the life of the process.
	defer agentSock.close()
	timeout := cfg.DialTimeout
	if timeout <= 0 {
		timeout = DefaultDialTimeout
	}
	var (
		conn    net.Conn
		closers []io.Closer
	)
	if cfg.Bastion != nil {
		b := *cfg.Bastion
		if b.Name == "" {
			b.Name = cfg.Name + " (bastion)"
		}
		if b.DialTimeout == 0 {
			b.DialTimeout = timeout
		}
		bc, bclosers, err := dial(ctx, b)
		if err != nil {
			return nil, nil, err
		}
		closers = append(bclosers, bc)
		conn, err = bc.DialContext(ctx, "tcp", cfg.Address)
		if err != nil {
			closeAll(closers)
			return nil, nil, fmt.Errorf("host %q: unable to reach %s through bastion %s: %w", cfg.Name, cfg.Address, b.Address, err)
		}
	} else {
		d := net.Dialer{Timeout: timeout}
		dctx, cancel := context.WithTimeout(ctx, timeout)
		conn, err = d.DialContext(dctx, "tcp", cfg.Address)
		cancel()
		if err != nil {
			return nil, nil, fmt.Errorf("host %q: unable to connect to %s: %w", cfg.Name, cfg.Address, err)
		}
	}

	// The handshake has no context; a timer closing the connection bounds it.
	timer := time.AfterFunc(timeout, func() { _ = conn.Close() })
	c, chans, reqs, err := ssh.NewClientConn(conn, cfg.Address, ccfg)
	stopped := timer.Stop()
	if err != nil {
		_ = conn.Close()
		closeAll(closers)
		if !stopped {
			return nil, nil, fmt.Errorf("host %q: SSH handshake with %s did not finish within %s", cfg.Name, cfg.Address, timeout)
		}
		return nil, nil, fmt.Errorf("host %q: SSH handshake with %s failed: %w", cfg.Name, cfg.Address, err)
	}
	return ssh.NewClient(c, chans, reqs), closers, nil
}

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
		Timeout:           cfg.DialTimeout,
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
