package composessh_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/composessh"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// lineSignal is a writer that closes seen once what it got holds want.
type lineSignal struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *lineSignal) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

func (w *lineSignal) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func docker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Commands in a service, over SSH: output, standard error apart or merged,
// the env (never on a command line), exit codes; output that streams as it
// comes; a timeout that leaves nothing of the command running; and the
// bad requests, refused before anything runs.
func TestExecInService(t *testing.T) {
	testharness.RequireDocker(t)
	h := testharness.SSHHost(t)
	reg := backends.NewRegistry(composessh.New(os.Getenv("SANDBOXER_COMPOSE_CMD")))
	sb, err := reg.Create(ctx(t), backends.Request{ID: backends.NewID(), Profile: profile(t), Host: h,
		Inputs: map[string]string{"repo": testharness.ComposeRepo(t, testharness.Image(t), "web", "worker")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := reg.Destroy(context.Background(), h, sb.ID); err != nil {
			t.Error(err)
		}
	})
	run := func(c context.Context, req backends.ExecRequest) (backends.ExecResult, error) {
		req.SandboxID = sb.ID
		if req.Service == "" {
			req.Service = "worker"
		}
		return reg.Exec(c, h, req)
	}

	var stdout, stderr bytes.Buffer
	res, err := run(ctx(t), backends.ExecRequest{Command: []string{"sh", "-c", `echo out; echo err >&2; echo "$GREETING"; exit 3`},
		Env: map[string]string{"GREETING": "hello $(world) 'x'"}, Stdout: &stdout, Stderr: &stderr})
	if err != nil || res.ExitCode != 3 || stdout.String() != "out\nhello $(world) 'x'\n" || stderr.String() != "err\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q, %v", res.ExitCode, stdout.String(), stderr.String(), err)
	}
	stdout.Reset()
	res, err = run(ctx(t), backends.ExecRequest{Command: []string{"sh", "-c", "echo a; echo b >&2; pwd; id -u"},
		User: "1234", Workdir: "/tmp", Stdout: &stdout})
	// Merged as they come: the engine keeps the two streams apart, so
	// their order is its own.
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	if slices.Sort(lines); err != nil || res.ExitCode != 0 || strings.Join(lines, " ") != "/tmp 1234 a b" {
		t.Fatalf("merged: exit %d, %q, %v", res.ExitCode, stdout.String(), err)
	}

	// Streams: the first line arrives while the command waits for the test.
	first := &lineSignal{want: "first\n", seen: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := run(ctx(t), backends.ExecRequest{Command: []string{"sh", "-c", "echo first; while [ ! -e /tmp/go ]; do sleep 0.1; done; echo second"}, Stdout: first})
		done <- err
	}()
	select {
	case <-first.seen:
	case err := <-done:
		t.Fatalf("the command ended before its first line arrived: %v, %q", err, first.String())
	}
	select {
	case err := <-done:
		t.Fatalf("the command ended though it waits for /tmp/go: %v", err)
	default:
	}
	container := docker(t, "ps", "-q", "--filter", "label=com.docker.compose.project="+sb.ComposeProject, "--filter", "label=com.docker.compose.service=worker")
	docker(t, "exec", container, "touch", "/tmp/go")
	if err := <-done; err != nil || first.String() != "first\nsecond\n" {
		t.Fatalf("streamed %q, %v", first.String(), err)
	}

	// A timeout kills the command and what it started, in the container.
	short, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = run(short, backends.ExecRequest{Command: []string{"sh", "-c", "sleep 1001 & sleep 1002; wait"}})
	if err == nil || !strings.Contains(err.Error(), "did not end in time") {
		t.Fatalf("past its timeout: %v", err)
	}
	if ps := docker(t, "exec", container, "ps", "-o", "args"); strings.Contains(ps, "sleep 100") {
		t.Fatalf("processes of the command remain after its timeout:\n%s", ps)
	}

	for _, c := range []struct {
		req  backends.ExecRequest
		want string
	}{
		{backends.ExecRequest{Service: "db", Command: []string{"true"}}, `has no service "db"; its services: web, worker`},
		{backends.ExecRequest{Command: nil}, "the command is empty"},
		{backends.ExecRequest{Command: []string{"true"}, Env: map[string]string{"1A": "x"}}, "1A"},
		{backends.ExecRequest{Command: []string{"true"}, Env: map[string]string{"A": "two\nlines"}}, "may not contain newlines"},
	} {
		if _, err := run(ctx(t), c.req); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error saying %q", c.req, err, c.want)
		}
	}

	// Stopped: refused before anything runs; stopped by hand: no container.
	docker(t, "stop", "-t", "1", container)
	if _, err := run(ctx(t), backends.ExecRequest{Command: []string{"true"}}); !errors.Is(err, backends.ErrServiceNotRunning) {
		t.Fatalf("in a stopped service: %v", err)
	}
	if _, err := reg.SetDesiredState(ctx(t), h, sb, backends.DesiredStopped); err != nil {
		t.Fatal(err)
	}
	if _, err := run(ctx(t), backends.ExecRequest{Service: "web", Command: []string{"true"}}); err == nil || !strings.Contains(err.Error(), "is stopped") {
		t.Fatalf("in a sandbox stopped on purpose: %v", err)
	}
}
