package hosts_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// Commands without input share one shell: each sees a fresh sh (nothing a
// command set or changed carries over), its own exit status and stderr.
func TestShellRunsCommandsOneAfterAnother(t *testing.T) {
	tr := hosts.InProcessSSH(t, 0)
	home, err := run(t, tr, "pwd")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		out, err := run(t, tr, "cd /tmp; X=set; export Y=set; echo $(pwd) ${X-} ${Y-}")
		if err != nil || out != "/tmp set set\n" {
			t.Fatalf("command %d: %q, %v", i, out, err)
		}
		if out, err := run(t, tr, `echo "$(pwd) ${X-unset} ${Y-unset}"`); err != nil || out != strings.TrimSpace(home)+" unset unset\n" {
			t.Fatalf("a command saw what the one before it set: %q, %v", out, err)
		}
	}
	_, err = run(t, tr, "echo partial; echo boom >&2; exit 7")
	if !hosts.IsExitCode(err, 7) || !strings.Contains(err.Error(), "boom") || !strings.Contains(err.Error(), `"in-process"`) {
		t.Fatalf("want exit 7 with its stderr and host: %v", err)
	}
	if out, err := run(t, tr, "echo after"); err != nil || out != "after\n" {
		t.Fatalf("after a failed command: %q, %v", out, err)
	}
	if n := hosts.ShellsStarted(tr); n != 1 {
		t.Fatalf("%d shells for commands run one after another, want 1", n)
	}
}

// Output is passed through byte for byte, however large and whatever it
// holds, with no trailing newline added.
func TestShellPassesBinaryOutput(t *testing.T) {
	tr := hosts.InProcessSSH(t, 0)
	data := randomBytes(3<<20 + 17)
	f := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(f, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		out, err := run(t, tr, "cat "+hosts.Quote(f))
		if err != nil {
			t.Fatal(err)
		}
		if sha256.Sum256([]byte(out)) != sha256.Sum256(data) {
			t.Fatalf("got %d bytes back, not the file's %d", len(out), len(data))
		}
	}
	if out, err := run(t, tr, "printf 'x'"); err != nil || out != "x" {
		t.Fatalf("got %q, %v", out, err)
	}
}

// A command with input gets a session of its own, also when idle shells
// hold every session: it takes an idle shell's place instead of waiting.
func TestShellGivesWayToCommandsWithInput(t *testing.T) {
	tr := hosts.InProcessSSH(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 3 {
		if out, err := run(t, tr, "echo shell"); err != nil || out != "shell\n" {
			t.Fatalf("round %d: %q, %v", i, out, err)
		}
		var out bytes.Buffer
		if err := tr.Run(ctx, "cat", strings.NewReader("input"), &out); err != nil || out.String() != "input" {
			t.Fatalf("round %d: a command with input got %q, %v", i, out.String(), err)
		}
	}
	if n := hosts.ShellsStarted(tr); n != 3 {
		t.Fatalf("%d shells, want 3 (each given up for the command with input)", n)
	}
}

// Many commands at once share the shells the session cap allows: a command
// waits for an idle shell instead of replacing one, and commands with
// input still get their sessions.
func TestShellsSharedUnderLoad(t *testing.T) {
	tr := hosts.InProcessSSH(t, 3)
	runAtOnce(t, tr, 60, "cat >/dev/null", func(i int) bool { return i%10 == 0 })
	// Each command with input may take an idle shell's place (6), on top
	// of the 3 the cap allows.
	if n := hosts.ShellsStarted(tr); n > 9 {
		t.Fatalf("%d shells for 54 commands with a cap of 3", n)
	}
}

// An idle shell that died (killed on the host) does not fail the next
// command: it had not taken it, so it runs elsewhere, once.
func TestShellDeadWhileIdle(t *testing.T) {
	tr := hosts.InProcessSSH(t, 0)
	// The shell's process group: its loop and the command's pipeline.
	group, err := run(t, tr, "ps -o pgid= -p $$")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := tr.Run(ctx, "kill -9 -"+strings.TrimSpace(group), strings.NewReader(""), nil); err != nil {
		t.Fatal(err)
	}
	count := filepath.Join(t.TempDir(), "count")
	if _, err := run(t, tr, "echo ran >> "+hosts.Quote(count)); err != nil {
		t.Fatalf("the command after the shell died: %v", err)
	}
	if data, _ := os.ReadFile(count); string(data) != "ran\n" {
		t.Fatalf("the command ran %d times", strings.Count(string(data), "ran"))
	}
}

// Whatever the login shell prints before the shell starts (a chatty
// startup file) is not taken for a command's output.
func TestShellIgnoresLoginNoise(t *testing.T) {
	// bash run by sshd reads ~/.bashrc, HOME as the session's environment
	// says: a home of the test's with a chatty one.
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".bashrc"), []byte("echo welcome; echo warning >&2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile("/etc/passwd"); err != nil || !strings.Contains(string(data), "root:x:0:0:root:/root:/bin/bash") {
		t.Skip("root's login shell here is not bash: nothing reads the startup file")
	}
	d := testharness.StartPrivateSSHD(t, "SetEnv HOME="+home)
	tr := newSSH(t, d.SSHConfig("noisy"))
	// A session of its own shows the noise: it is there to be ignored.
	var own bytes.Buffer
	if err := tr.Run(context.Background(), "echo out", strings.NewReader(""), &own); err != nil || own.String() != "welcome\nout\n" {
		t.Fatalf("a session of its own printed %q (%v); want the startup file's noise before the output", own.String(), err)
	}
	for range 2 {
		_, err := run(t, tr, "echo out; echo bad >&2; exit 2")
		var ce *hosts.CommandError
		if !errors.As(err, &ce) || strings.TrimSpace(ce.Stderr) != "bad" {
			t.Fatalf("stderr of the command should be its own: %v", err)
		}
		if out, err := run(t, tr, "echo out"); err != nil || out != "out\n" {
			t.Fatalf("got %q, %v", out, err)
		}
	}
}

// Commands run one after another, in a shell and in sessions of their own
// (given input, as commands with input are): what a shell saves per command.
// go test -run '^$' -bench BenchmarkCommand ./internal/hosts/
func BenchmarkCommand(b *testing.B) {
	tr, err := hosts.NewSSH(testharness.SSHConfig(b, "bench", false))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = tr.Close() }()
	ctx := context.Background()
	b.Run("shell", func(b *testing.B) {
		for b.Loop() {
			if err := tr.Run(ctx, "true", nil, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("session", func(b *testing.B) {
		for b.Loop() {
			if err := tr.Run(ctx, "true", strings.NewReader(""), nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// With the client's cap at sshd's own MaxSessions (10 by default), commands
// with input take idle shells' places: sshd counts a closed shell's session
// until its processes have exited and been reaped, so it may refuse the
// session that takes the place ("no more sessions"). The command asks again
// instead of failing, and the connection, which answered, is kept for the
// commands running on it.
func TestShellsGiveTheirPlaceBackBeforeItIsTaken(t *testing.T) {
	cfg := testharness.SSHConfig(t, "cap", false)
	cfg.MaxSessions = 10
	tr := newSSH(t, cfg)
	// Each command long enough that all ten run at once, so none shares.
	for round := range 3 {
		runAtOnce(t, tr, 10, "cat >/dev/null; sleep 0.2", func(int) bool { return false }) // ten shells, then idle
		if t.Failed() {
			t.Fatalf("round %d: commands in shells failed", round)
		}
		runAtOnce(t, tr, 10, "cat >/dev/null; sleep 0.2", func(int) bool { return true }) // each takes a shell's place
		if t.Failed() {
			t.Fatalf("round %d: commands with input failed", round)
		}
	}
}

// A host whose sshd allows fewer sessions than the provider opens at once
// (MaxSessions 3 against a cap of 8) refuses the rest: those commands wait
// for a session to end instead of failing, and the connection, which
// answered, is kept (one handshake), with every command running on it.
func TestHostWithFewerSessionsThanTheCap(t *testing.T) {
	d := testharness.StartPrivateSSHD(t, "MaxSessions 3")
	tr := newSSH(t, d.SSHConfig("few"))
	runAtOnce(t, tr, 16, "cat >/dev/null; sleep 0.1", func(i int) bool { return i%2 == 0 })
	if n := d.Accepted(); n != 1 {
		t.Errorf("%d handshakes, want 1: a refused session is no dead connection", n)
	}
}

// runAtOnce runs n commands on tr at once, each script followed by printing
// its number, which it must; withInput(i) gives command i a byte of input
// (a session of its own) instead of none (a shell).
func runAtOnce(t *testing.T, tr hosts.Transport, n int, script string, withInput func(i int) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var in io.Reader
			if withInput(i) {
				in = strings.NewReader("x")
			}
			var out bytes.Buffer
			if err := tr.Run(ctx, fmt.Sprintf("%s; echo %d", script, i), in, &out); err != nil {
				errs <- err
			} else if out.String() != fmt.Sprintf("%d\n", i) {
				errs <- fmt.Errorf("command %d printed %q", i, out.String())
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
