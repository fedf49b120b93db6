package hosts

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflogtest"
	"golang.org/x/crypto/ssh"
)

// inProcessServer is an SSH server in the test process that runs each
// exec request with this machine's sh, in a process group of its own, as
// sshd does: the transport's scheduling, the shells' framing and their
// failure paths run against real processes with no harness.
type inProcessServer struct {
	cfg      SSHConfig
	accepted atomic.Int32
	// silent completes handshakes and then answers nothing: a host whose
	// sshd processes were killed while the TCP connection stayed open.
	silent bool
	// stdinGate, when set, is called for each session's command; the
	// session's input reaches the command only once the returned channel
	// is closed (a host too loaded to read it).
	stdinGate func(cmd string) <-chan struct{}
	// closeGate, when set, is waited on before a session whose command
	// ended is closed (a host slow to reap).
	closeGate chan struct{}
	// rewrite, when set, replaces each command before it runs.
	rewrite func(cmd string) string
	// authorized, when set, is the one client key accepted.
	authorized ssh.PublicKey
}

func startInProcessServer(t *testing.T, configure func(*inProcessServer)) *inProcessServer {
	t.Helper()
	srv := &inProcessServer{}
	if configure != nil {
		configure(srv)
	}
	_, hostPriv, _ := ed25519.GenerateKey(rand.Reader)
	hostSigner, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		t.Fatal(err)
	}
	scfg := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
		if srv.authorized != nil && !bytes.Equal(k.Marshal(), srv.authorized.Marshal()) {
			return nil, errors.New("not the authorized key")
		}
		return nil, nil
	}}
	scfg.AddHostKey(hostSigner)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			srv.accepted.Add(1)
			go srv.serve(t, c, scfg)
		}
	}()
	_, clientPriv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKey(clientPriv, "")
	if err != nil {
		t.Fatal(err)
	}
	srv.cfg = SSHConfig{Name: "in-process", Address: l.Addr().String(), User: "u", PrivateKey: pem.EncodeToMemory(block),
		HostKey: string(ssh.MarshalAuthorizedKey(hostSigner.PublicKey()))}
	return srv
}

func (srv *inProcessServer) serve(t *testing.T, c net.Conn, scfg *ssh.ServerConfig) {
	sc, chans, reqs, err := ssh.NewServerConn(c, scfg)
	if err != nil {
		return
	}
	t.Cleanup(func() { _ = sc.Close() })
	go func() {
		for req := range reqs {
			if !srv.silent {
				_ = req.Reply(true, nil) // keepalives are answered
			}
		}
	}()
	for nc := range chans {
		if srv.silent {
			continue // never answered
		}
		if nc.ChannelType() == "direct-tcpip" {
			go forwardChannel(nc)
			continue
		}
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "sessions and direct-tcpip only")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			continue
		}
		go srv.session(ch, chReqs)
	}
}

// forwardChannel relays a direct-tcpip channel to the address it names,
// as sshd does for a client going through a bastion.
func forwardChannel(nc ssh.NewChannel) {
	var target struct {
		Host       string
		Port       uint32
		OriginHost string
		OriginPort uint32
	}
	if err := ssh.Unmarshal(nc.ExtraData(), &target); err != nil {
		_ = nc.Reject(ssh.ConnectionFailed, err.Error())
		return
	}
	conn, err := net.Dial("tcp", net.JoinHostPort(target.Host, strconv.Itoa(int(target.Port))))
	if err != nil {
		_ = nc.Reject(ssh.ConnectionFailed, err.Error())
		return
	}
	ch, reqs, err := nc.Accept()
	if err != nil {
		_ = conn.Close()
		return
	}
	go ssh.DiscardRequests(reqs)
	go func() { _, _ = io.Copy(ch, conn); _ = ch.Close() }()
	_, _ = io.Copy(conn, ch)
	_ = conn.Close()
}

// session runs the channel's exec request.
func (srv *inProcessServer) session(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer func() { _ = ch.Close() }()
	for req := range reqs {
		if req.Type != "exec" || len(req.Payload) < 4 {
			_ = req.Reply(false, nil)
			continue
		}
		cmdline := string(req.Payload[4:])
		if srv.rewrite != nil {
			cmdline = srv.rewrite(cmdline)
		}
		_ = req.Reply(true, nil)
		go ssh.DiscardRequests(reqs)
		cmd := exec.Command("sh", "-c", cmdline)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Stdout, cmd.Stderr = ch, ch.Stderr()
		in, _ := cmd.StdinPipe()
		if err := cmd.Start(); err != nil {
			return
		}
		go func() {
			if srv.stdinGate != nil {
				<-srv.stdinGate(cmdline)
			}
			_, _ = io.Copy(in, ch)
			_ = in.Close() // the client closed the channel (or its input)
		}()
		err := cmd.Wait()
		if srv.closeGate != nil {
			<-srv.closeGate
		}
		status := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			status = exit.ExitCode()
			if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				status = 128 + int(ws.Signal())
			}
		}
		payload := make([]byte, 4)
		binary.BigEndian.PutUint32(payload, uint32(status))
		_, _ = ch.SendRequest("exit-status", false, payload)
		return
	}
}

func (srv *inProcessServer) transport(t *testing.T, maxSessions int) *SSH {
	t.Helper()
	cfg := srv.cfg
	cfg.MaxSessions = maxSessions
	tr, err := NewSSH(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// A background child that keeps its command's output open writes into that
// command's output, never the next one's, on stdout and on stderr.
func TestInProcessStragglersStayInTheirCommand(t *testing.T) {
	tr := startInProcessServer(t, nil).transport(t, 1)
	ctx := context.Background()
	var first bytes.Buffer
	if err := tr.Run(ctx, "(sleep 0.3; echo LATE-OUT; echo LATE-ERR >&2) & echo first", nil, &first); err != nil {
		t.Fatal(err)
	}
	var second bytes.Buffer
	err := tr.Run(ctx, "echo second; echo second-err >&2; exit 4", nil, &second)
	var ce *CommandError
	if !errors.As(err, &ce) || ce.ExitCode != 4 {
		t.Fatalf("second command: %v", err)
	}
	if first.String() != "first\nLATE-OUT\n" || second.String() != "second\n" || ce.Stderr != "second-err\n" {
		t.Fatalf("first %q, second %q, second's stderr %q", first.String(), second.String(), ce.Stderr)
	}
	if n := tr.shellsStarted.Load(); n != 1 {
		t.Fatalf("%d shells, want both commands in one", n)
	}
}

// A shell slow to acknowledge (a loaded host) is waited for, however
// longer than the keepalive timeout, while the connection answers: the
// commands in flight beside it are not dropped with the connection.
func TestInProcessSlowAckDropsNothing(t *testing.T) {
	defer func(i, d time.Duration) { keepAliveInterval, keepAliveTimeout = i, d }(keepAliveInterval, keepAliveTimeout)
	keepAliveInterval, keepAliveTimeout = 20*time.Millisecond, 100*time.Millisecond
	release := make(chan struct{})
	var gated atomic.Bool
	srv := startInProcessServer(t, func(s *inProcessServer) {
		s.stdinGate = func(string) <-chan struct{} {
			if gated.CompareAndSwap(false, true) {
				return release // the first shell reads its first request late
			}
			open := make(chan struct{})
			close(open)
			return open
		}
	})
	tr := srv.transport(t, 4)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	slow := make(chan error, 1)
	go func() {
		out, err := Output(ctx, tr, "echo slow")
		if err == nil && string(out) != "slow\n" {
			err = errors.New("output " + string(out))
		}
		slow <- err
	}()
	for !gated.Load() {
		time.Sleep(time.Millisecond) // polling for the server to have taken the slow shell
	}
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for range 6 {
		wg.Go(func() {
			if out, err := Output(ctx, tr, "echo beside"); err != nil || string(out) != "beside\n" {
				errs <- errors.Join(err, errors.New("output "+string(out)))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a command beside the slow one: %v", err)
	}
	// Many keepalive timeouts later, the slow one is still waited for.
	select {
	case err := <-slow:
		t.Fatalf("the slow command ended before its shell read it: %v", err)
	case <-time.After(10 * keepAliveTimeout):
	}
	close(release)
	if err := <-slow; err != nil {
		t.Fatalf("the slow command: %v", err)
	}
	if n := srv.accepted.Load(); n != 1 {
		t.Fatalf("%d connections, want 1: nothing was dropped", n)
	}
}

// A caller that needs a session token held by an idle shell waits for the
// host to end that shell, but no longer than its own context.
func TestInProcessCancelledWaiterReturns(t *testing.T) {
	reaped := make(chan struct{})
	srv := startInProcessServer(t, func(s *inProcessServer) { s.closeGate = reaped })
	defer close(reaped)
	tr := srv.transport(t, 1)
	if err := tr.Run(context.Background(), "true", nil, nil); err != nil { // leaves an idle shell with the only token
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := tr.Run(ctx, "cat", strings.NewReader("input"), io.Discard) // needs a session of its own
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the cancelled caller waited %s for the shell's end", took)
	}
}

// A host whose sh cannot run the loop (here: it exits 0 at once, as a
// ForceCommand would) gets sessions of their own from then on, decided
// from how the shell ended without a race (run with -race).
func TestInProcessHostWithoutShells(t *testing.T) {
	srv := startInProcessServer(t, func(s *inProcessServer) {
		s.rewrite = func(cmd string) string {
			if strings.Contains(cmd, strings.TrimSpace(shellBanner)) {
				return "exit 0"
			}
			return cmd
		}
	})
	tr := srv.transport(t, 4)
	for i := range 3 {
		if out, err := Output(context.Background(), tr, "echo own"); err != nil || string(out) != "own\n" {
			t.Fatalf("command %d: %q, %v", i, out, err)
		}
	}
	if !tr.noShells.Load() || tr.shellsStarted.Load() != 0 || tr.sessionsRun.Load() != 3 {
		t.Fatalf("noShells %v, %d shells, %d sessions", tr.noShells.Load(), tr.shellsStarted.Load(), tr.sessionsRun.Load())
	}
}

// A connection that stops answering is closed by its keepalive: the
// command's wait for a session ends, it redials once, and fails saying
// why, instead of waiting forever.
func TestSilentConnectionIsGivenUp(t *testing.T) {
	defer func(i, d time.Duration) { keepAliveInterval, keepAliveTimeout = i, d }(keepAliveInterval, keepAliveTimeout)
	keepAliveInterval, keepAliveTimeout = 50*time.Millisecond, 200*time.Millisecond
	srv := startInProcessServer(t, func(s *inProcessServer) { s.silent = true })
	tr := srv.transport(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := tr.Run(ctx, "true", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("Run on a silent connection: %v", err)
	}
	if n := srv.accepted.Load(); n != 2 {
		t.Fatalf("%d connections, want the first and one redial", n)
	}
}

// The caller's deadline ends the wait for a session, answer or not.
func TestSilentConnectionHonoursTheContext(t *testing.T) {
	tr := startInProcessServer(t, func(s *inProcessServer) { s.silent = true }).transport(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := tr.Run(ctx, "true", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run past its deadline: %v", err)
	}
}

// One deadline covers a whole connect: here the bastion's handshake and the
// hop through it succeed, and the target accepts TCP but never speaks SSH.
func TestConnectThroughABastionHasOneDeadline(t *testing.T) {
	bastion := startInProcessServer(t, nil)
	mute, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mute.Close() })
	go func() {
		for {
			c, err := mute.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() })
		}
	}()
	cfg := bastion.cfg
	b := bastion.cfg
	cfg.Name, cfg.Address, cfg.Bastion, cfg.DialTimeout = "behind", mute.Addr().String(), &b, 300*time.Millisecond
	tr, err := NewSSH(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tr.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = tr.Run(ctx, "true", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "within 300ms") || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run behind a bastion, target mute: %v", err)
	}
	if n := bastion.accepted.Load(); n != 1 {
		t.Fatalf("%d connections to the bastion, want 1", n)
	}
}

// A command whose caller gives up, in a shell or in a session of its own
// (a host without shells), ends at once, its output cut, and is killed on
// the host with what it started; the next command runs, in a new shell.
func TestInProcessCommandKilledWhenItsCallerGivesUp(t *testing.T) {
	for _, shells := range []bool{true, false} {
		tr := startInProcessServer(t, nil).transport(t, 2)
		tr.noShells.Store(!shells)
		pids := filepath.Join(t.TempDir(), "pids")
		ctx, cancel := context.WithCancel(context.Background())
		var out bytes.Buffer
		errc := make(chan error, 1)
		go func() { errc <- tr.Run(ctx, "sleep 6019 & echo $$ $! > "+Quote(pids)+"; wait; echo never", nil, &out) }()
		var procs []string
		for deadline := time.Now().Add(10 * time.Second); len(procs) < 2; time.Sleep(10 * time.Millisecond) { // polling for the file
			if data, _ := os.ReadFile(pids); bytes.HasSuffix(data, []byte("\n")) {
				procs = strings.Fields(string(data))
			}
			if time.Now().After(deadline) {
				t.Fatal("the command did not start")
			}
		}
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) || out.Len() > 0 {
			t.Fatalf("shells %v: %v, output %q; want context.Canceled and no output", shells, err, out.String())
		}
		for _, pid := range procs {
			waitGone(t, pid)
		}
		if got, err := Output(context.Background(), tr, "echo next"); err != nil || string(got) != "next\n" || shells && tr.shellsStarted.Load() != 2 {
			t.Fatalf("shells %v: then %q, %v, after %d shells; want a new shell", shells, got, err, tr.shellsStarted.Load())
		}
	}
}

// A host whose login shell is slow to start (here: 0.2 s, as a ~/.bashrc
// running pyenv init) gets at most maxShellStarts shells started at once
// by a burst of commands on a fresh connection; every command still runs.
func TestInProcessShellStartsAreFew(t *testing.T) {
	srv := startInProcessServer(t, func(s *inProcessServer) {
		s.rewrite = func(cmd string) string {
			if strings.Contains(cmd, strings.TrimSpace(shellBanner)) {
				return "sleep 0.2; " + cmd
			}
			return cmd
		}
	})
	tr := srv.transport(t, 8)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			out, err := Output(context.Background(), tr, fmt.Sprintf("echo %d", i))
			if err == nil && string(out) != fmt.Sprintf("%d\n", i) {
				err = fmt.Errorf("command %d printed %q", i, out)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if most := tr.startsMost.Load(); most < 1 || most > maxShellStarts {
		t.Fatalf("%d shells were being started at once, want 1 to %d", most, maxShellStarts)
	}
	if n := tr.shellsStarted.Load(); n < 1 || n > 8 || tr.sessionsRun.Load() != 0 {
		t.Fatalf("%d shells started, %d sessions of their own", n, tr.sessionsRun.Load())
	}
}

// A command that waits for the connection's one shell says so in the DEBUG
// log, naming the shell it then ran in, and the shell's start says how long
// the login shell took: where an apply's time goes, with
// TF_LOG_PROVIDER=DEBUG.
func TestInProcessWaitForAShellIsLogged(t *testing.T) {
	tr := startInProcessServer(t, nil).transport(t, 1)
	var buf syncBuffer
	ctx := tflogtest.RootLogger(context.Background(), &buf)
	fifo := filepath.Join(t.TempDir(), "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() { first <- tr.Run(ctx, "read -r x <"+Quote(fifo), nil, nil) }()
	for tr.shellsStarted.Load() == 0 { // the first command has the shell
		runtime.Gosched()
	}
	second := make(chan error, 1)
	go func() { second <- tr.Run(ctx, "echo second", nil, nil) }()
	for len(tr.starting) == 0 { // the second waits for a session token, which the shell holds
		runtime.Gosched()
	}
	time.Sleep(shellWaitLogged) // a wait long enough to be told
	if err := os.WriteFile(fifo, []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []chan error{first, second} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	buf.mu.Lock()
	logged := buf.b.String()
	buf.mu.Unlock()
	entries, err := tflogtest.MultilineJSONDecode(strings.NewReader(logged))
	if err != nil {
		t.Fatal(err)
	}
	var started, waited int
	for _, e := range entries {
		switch e["@message"] {
		case "started a shell":
			started++
			if e["shell"] != float64(1) || e["start_ms"] == nil {
				t.Errorf("shell start logged as %v", e)
			}
		case "waited for a shell": // the first command's too, when its shell was slow to start
			if e["started"] == true {
				continue
			}
			waited++
			if ms, _ := e["waited_ms"].(float64); e["shell"] != float64(1) || ms < float64(shellWaitLogged.Milliseconds()) {
				t.Errorf("wait logged as %v", e)
			}
		}
	}
	if started != 1 || waited != 1 || tr.shellsStarted.Load() != 1 {
		t.Fatalf("%d shell starts and %d waits for another command logged, %d shells started; want 1, 1, 1: %s", started, waited, tr.shellsStarted.Load(), logged)
	}
}

// syncBuffer is a log destination that goroutines write while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// procScan is a script that prints "found" when a process's command line
// holds marker, else "clean". The script holds marker only in two pieces,
// so that its own command line, were it on one, would not match: what is
// looked for is a command's content, which the caller adds.
func procScan(marker string) string {
	half := len(marker) / 2
	return fmt.Sprintf(`p=%s; p="$p"%s; r=clean; for f in /proc/[0-9]*/cmdline; do c=$(tr '\0' ' ' 2>/dev/null < "$f"); case "$c" in *"$p"*) r=found;; esac; done; echo "$r"`,
		Quote(marker[:half]), Quote(marker[half:]))
}

// A command's script is on no process's command line, where any user of
// the host could read it (/proc/PID/cmdline): a command may hold a file's
// content. Run on the in-process server's shells and on Local.
func TestCommandsAreOnNoCommandLine(t *testing.T) {
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("no /proc here to read command lines from")
	}
	marker := "sandboxer-private-" + randomSuffix()
	script := ": " + marker + "; " + procScan(marker)
	for name, tr := range map[string]Transport{
		"shell": startInProcessServer(t, nil).transport(t, 4),
		"local": &Local{Name: "local"},
	} {
		out, err := Output(t.Context(), tr, script)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := strings.TrimSpace(string(out)); got != "clean" {
			t.Errorf("%s: a process's command line held the script (%s)", name, got)
		}
	}
	// The scan itself finds a command line that holds the marker.
	holder := exec.Command("sh", "-c", "cat >/dev/null", marker)
	in, err := holder.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	out, err := Output(t.Context(), &Local{Name: "local"}, procScan(marker))
	_ = in.Close()
	_ = holder.Wait()
	if err != nil || strings.TrimSpace(string(out)) != "found" {
		t.Fatalf("the scan did not find a command line that holds the marker: %q, %v", out, err)
	}
}

// On a host whose sh cannot run the shells' loop, commands run in
// sessions of their own, whose command lines any user of the host can
// read: a small file then travels on the session's input, never in its
// command, and so does a small repo.
func TestContentStaysOffSessionCommandLines(t *testing.T) {
	secret := "DB_PASSWORD=" + randomSuffix()
	var mu sync.Mutex
	var cmds []string
	srv := startInProcessServer(t, func(s *inProcessServer) {
		s.rewrite = func(cmd string) string {
			if strings.Contains(cmd, strings.TrimSpace(shellBanner)) {
				return "exit 0"
			}
			mu.Lock()
			cmds = append(cmds, cmd)
			mu.Unlock()
			return cmd
		}
	})
	tr := srv.transport(t, 4)
	dir := t.TempDir()
	if err := WriteFile(t.Context(), tr, filepath.Join(dir, ".env"), []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, ".env"), []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := MakeDir(t.Context(), tr, filepath.Join(dir, "ws"), src, ""); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, ".env"), filepath.Join(dir, "ws", ".env")} {
		if got, err := os.ReadFile(p); err != nil || string(got) != secret+"\n" {
			t.Fatalf("%s: %q, %v", p, got, err)
		}
	}
	if !tr.noShells.Load() {
		t.Fatal("the host ran the shells' loop")
	}
	mu.Lock()
	defer mu.Unlock()
	for _, c := range cmds {
		if strings.Contains(c, secret) {
			t.Errorf("a session's command held the content: %.80q", c)
		}
	}
}

// A command in a shell holds no descriptor of the loop's beyond its own
// three: a background child of the command holding a copy of the session's
// stderr would keep the session open after the loop exits.
func TestShellCommandHoldsNoDescriptorOfTheLoop(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc here to read descriptors from")
	}
	// pipesAbove2 lists the descriptors above 2 that are pipes or sockets
	// in a listing of /proc/PID/fd.
	pipesAbove2 := func(listing string) map[string]string {
		fds := map[string]string{}
		for _, line := range strings.Split(listing, "\n") {
			f := strings.Fields(line)
			if len(f) < 3 || f[len(f)-2] != "->" {
				continue
			}
			n, target := f[len(f)-3], f[len(f)-1]
			if n != "0" && n != "1" && n != "2" && (strings.HasPrefix(target, "pipe:") || strings.HasPrefix(target, "socket:")) {
				fds[n] = target
			}
		}
		return fds
	}
	// What every process this test starts inherits from its environment.
	inherited, err := exec.Command("sh", "-c", "ls -l /proc/$$/fd").Output()
	if err != nil {
		t.Fatal(err)
	}
	tr := startInProcessServer(t, nil).transport(t, 4)
	ppid := filepath.Join(t.TempDir(), "ppid")
	// The parent of a program the command runs is the command's own shell,
	// whose descriptors ls lists (no redirection of the command's own
	// shell in the way: a redirected command keeps a copy of what it
	// replaced).
	script := fmt.Sprintf(`sh -c 'echo $PPID > %[1]s'; ls -l /proc/"$(cat %[1]s)"/fd`, Quote(ppid))
	got, err := Output(t.Context(), tr, script)
	if err != nil {
		t.Fatal(err)
	}
	if tr.shellsStarted.Load() == 0 {
		t.Fatal("the command did not run in a shell")
	}
	base := pipesAbove2(string(inherited))
	for n, target := range pipesAbove2(string(got)) {
		if _, ok := base[n]; !ok {
			t.Errorf("the command's shell holds descriptor %s (%s) beyond its own three", n, target)
		}
	}
	// Nor the loop's variables: its request's mark would let it end its
	// own framing.
	if out, err := Output(t.Context(), tr, `echo "${_sbx_n-unset} ${_sbx_w-unset} ${_sbx_l-unset}"`); err != nil || string(out) != "unset unset unset\n" {
		t.Errorf("the command sees the loop's variables: %q, %v", out, err)
	}
}

// A script too long for a shell, and a script with input, run in sessions
// of their own, whose command lines any user of the host can read: the
// script travels on the session's input, never in its command, whatever
// its size, and runs as written (its status and trailing newlines kept).
func TestLongScriptsStayOffSessionCommandLines(t *testing.T) {
	marker := "sandboxer-private-" + randomSuffix()
	var mu sync.Mutex
	var cmds []string
	srv := startInProcessServer(t, func(s *inProcessServer) {
		s.rewrite = func(cmd string) string {
			mu.Lock()
			cmds = append(cmds, cmd)
			mu.Unlock()
			return cmd
		}
	})
	tr := srv.transport(t, 4)
	long := "v='" + marker + strings.Repeat("x", shellScriptMax) + "'\nprintf '%s\\n' \"${#v}\"\nprintf 'tail\\n\\n'\nexit 3\n"
	var out bytes.Buffer
	err := tr.Run(t.Context(), long, nil, &out)
	if !IsExitCode(err, 3) {
		t.Fatalf("the long script ended with %v, want status 3", err)
	}
	if want := fmt.Sprintf("%d\ntail\n\n", len(marker)+shellScriptMax); out.String() != want {
		t.Errorf("the long script printed %q, want %q", out.String(), want)
	}
	out.Reset()
	if err := tr.Run(t.Context(), ": "+marker+"; tr a-z A-Z", strings.NewReader("input\n"), &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "INPUT\n" {
		t.Errorf("the script with input printed %q, want its input upper-cased", out.String())
	}
	mu.Lock()
	defer mu.Unlock()
	for _, c := range cmds {
		if strings.Contains(c, marker) {
			t.Errorf("a session's command held the script: %.80q", c)
		}
	}
}

// A dial that hangs (the host accepts TCP and never speaks SSH) holds up
// nothing else of the transport: a second command gives up when its
// context ends, and Close returns at once; the dial's connection, were it
// to succeed, is not pooled after the Close.
func TestHangingDialHoldsNothingUp(t *testing.T) {
	mute, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mute.Close() })
	var held sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := mute.Accept()
			if err != nil {
				return
			}
			held.Lock()
			conns = append(conns, c)
			held.Unlock()
		}
	}()
	cfg := startInProcessServer(t, nil).cfg
	cfg.Address, cfg.DialTimeout = mute.Addr().String(), 20*time.Second
	tr, err := NewSSH(cfg)
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() { first <- tr.Run(t.Context(), "true", nil, nil) }()
	waitUntil(t, func() bool { held.Lock(); defer held.Unlock(); return len(conns) == 1 })
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if err := tr.Run(ctx, "true", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a command waiting for another's dial: %v, want its deadline", err)
	}
	closed := make(chan struct{})
	go func() { _ = tr.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(2 * time.Second):
		t.Fatal("Close waited for a hanging dial")
	}
	held.Lock()
	for _, c := range conns {
		_ = c.Close() // the dial ends
	}
	held.Unlock()
	if err := <-first; err == nil {
		t.Fatal("the hanging dial succeeded")
	}
}

// waitUntil polls cond, an observable state, for up to 10 s.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A large copy into a directory that exists is refused as fs.ErrExist,
// though the command ends before it reads the tar on its input: nothing
// of the directory is anyone's to remove.
func TestMakeDirLargeCopyIntoAnExistingDirectory(t *testing.T) {
	tr := startInProcessServer(t, nil).transport(t, 4)
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "blob"), bytes.Repeat([]byte("x"), smallTarMax+1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "theirs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := MakeDir(t.Context(), tr, dir, src, ""); !errors.Is(err, fs.ErrExist) {
			t.Fatalf("a large copy into an existing directory: %v, want fs.ErrExist", err)
		}
	}
}

// The session runners run a script only when it arrived whole (its
// closing mark), and with no positional parameters of their own.
func TestSessionRunnersRefuseACutScript(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	script := "echo \"$#\" > " + Quote(marker) + "\n"
	mark := string(NewMark())
	sent := script + "\n#" + mark
	for name, runner := range map[string]string{"session": sessionScript, "with input": stdinScriptRunner} {
		for _, cut := range []bool{true, false} {
			_ = os.Remove(marker)
			input := sent
			if cut {
				input = sent[:len(sent)-5]
			}
			cmd := exec.Command("sh", "-c", runner, "sh", strconv.Itoa(len(sent)), mark)
			// Its watcher kills its process group when the input ends: a
			// group of its own, and the input held open as a session's is
			// (the runner with input reads it to its end).
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			var outBuf bytes.Buffer
			cmd.Stdout, cmd.Stderr = &outBuf, &outBuf
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			_, _ = io.WriteString(in, input)
			if runner == stdinScriptRunner || cut {
				_ = in.Close()
			}
			err = cmd.Wait()
			_ = in.Close()
			out := outBuf.Bytes()
			got, rerr := os.ReadFile(marker)
			switch {
			case cut && (err == nil || rerr == nil):
				t.Errorf("%s: a cut script ran (%v, %q): %s", name, err, got, out)
			case !cut && (err != nil || strings.TrimSpace(string(got)) != "0"):
				t.Errorf("%s: a whole script: %v, $# = %q: %s", name, err, got, out)
			}
		}
	}
}
