package composessh_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/composessh"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

func repoOf(t *testing.T, compose string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "compose.yaml"), []byte(compose), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A one-shot migration that exited 0 has completed and the sandbox is
// ready (compose's own --wait calls it failed); its logs are there on
// demand, prefixed with the service.
func TestOneShotCompletesAndLogs(t *testing.T) {
	testharness.RequireDocker(t)
	h := testharness.SSHHost(t)
	reg := backends.NewRegistry(composessh.New(os.Getenv("SANDBOXER_COMPOSE_CMD")))
	image := testharness.Image(t)
	repo := repoOf(t, `services:
  web:
    image: `+image+`
    command: ["sh", "-c", "echo web up; trap 'exit 0' TERM; while true; do sleep 1; done"]
  migrate:
    image: `+image+`
    restart: "no"
    command: ["sh", "-c", "echo migrated 3 tables"]
`)
	sb, err := reg.Create(ctx(t), backends.Request{ID: backends.NewID(), Profile: profile(t), Host: h, Inputs: map[string]string{"repo": repo}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := reg.Destroy(context.Background(), h, sb.ID); err != nil {
			t.Error(err)
		}
	})
	// The migration may still run when the create sees web ready: look
	// until it has ended, as a refresh would.
	var st backends.Status
	for st.Services == nil || st.Services[0].State == "running" {
		if _, st, err = reg.Get(ctx(t), h, sb.ID); err != nil {
			t.Fatal(err)
		}
	}
	if st.State != backends.StatusReady || st.Services[0].State != backends.ServiceCompleted {
		t.Fatalf("status %+v, want ready with migrate completed", st)
	}
	var logs bytes.Buffer
	if err := reg.Logs(ctx(t), h, backends.LogsRequest{SandboxID: sb.ID, Tail: 5, Out: &logs}); err != nil {
		t.Fatal(err)
	}
	if got := logs.String(); !strings.Contains(got, "migrate | migrated 3 tables\n") || !strings.Contains(got, "web | web up\n") {
		t.Fatalf("logs:\n%s", got)
	}
	logs.Reset()
	if err := reg.Logs(ctx(t), h, backends.LogsRequest{SandboxID: sb.ID, Services: []string{"web"}, Since: "1h", Out: &logs}); err != nil ||
		strings.Contains(logs.String(), "migrate") || !strings.Contains(logs.String(), "web up") {
		t.Fatalf("web's logs: %v\n%s", err, logs.String())
	}
	for _, bad := range []backends.LogsRequest{{Services: []string{"db"}}, {Since: "yesterday"}} {
		bad.SandboxID, bad.Out = sb.ID, &logs
		if err := reg.Logs(ctx(t), h, bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// unhealthyRepo is a stack whose one service runs but whose healthcheck
// never passes, saying why.
func unhealthyRepo(t *testing.T) string {
	t.Helper()
	return repoOf(t, `services:
  api:
    image: `+testharness.Image(t)+`
    command: ["sh", "-c", "echo api starting; trap 'exit 0' TERM; while true; do sleep 1; done"]
    healthcheck:
      test: ["CMD", "sh", "-c", "echo database not reachable at db:5432; exit 1"]
      interval: 1s
      retries: 1
`)
}

// A create whose healthcheck never passes fails showing what the
// healthcheck itself said, the service's state and its last log lines.
func TestFailedHealthcheckShowsItsOutput(t *testing.T) {
	testharness.RequireDocker(t)
	h := testharness.SSHHost(t)
	reg := backends.NewRegistry(composessh.New(os.Getenv("SANDBOXER_COMPOSE_CMD")))
	repo := unhealthyRepo(t)
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id := backends.NewID()
	_, err := reg.Create(c, backends.Request{ID: id, Profile: profile(t), Host: h, Inputs: map[string]string{"repo": repo}})
	if err == nil {
		t.Fatal("a create whose healthcheck fails succeeded")
	}
	for _, want := range []string{"service api (unhealthy):", "health unhealthy", "healthcheck (exit 1): database not reachable at db:5432", "api starting"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
	if left := leftovers(t, composessh.ProjectName(id)); left != "" {
		t.Fatalf("the failed create left: %s", left)
	}
}

// lookStalls is a host whose listings of a sandbox's containers, after the
// first `free` of them, answer only when their caller gives up: a deadline
// that ends the wait for readiness mid-look.
type lookStalls struct {
	hosts.Transport
	free  int
	looks atomic.Int64
}

func (l *lookStalls) Run(ctx context.Context, script string, stdin io.Reader, stdout io.Writer) error {
	if strings.HasPrefix(script, "if test -d ") && strings.Contains(script, " ps -a --filter ") && l.looks.Add(1) > int64(l.free) {
		<-ctx.Done()
		return ctx.Err()
	}
	return l.Transport.Run(ctx, script, stdin, stdout)
}

// A deadline that ends the wait for readiness while it looks at the
// services still reports the services not ready, as of the look before.
func TestDeadlineMidLookStillReportsTheServices(t *testing.T) {
	testharness.RequireDocker(t)
	real := testharness.SSHHost(t)
	stalls := &lookStalls{Transport: real.Transport, free: 1}
	h := &hosts.Host{Transport: stalls, RootDir: real.RootDir, EndpointHost: real.EndpointHost}
	reg := backends.NewRegistry(composessh.New(os.Getenv("SANDBOXER_COMPOSE_CMD")))
	repo := unhealthyRepo(t)
	c, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	id := backends.NewID()
	_, err := reg.Create(c, backends.Request{ID: id, Profile: profile(t), Host: h, Inputs: map[string]string{"repo": repo}})
	if err == nil {
		t.Fatal("a create whose healthcheck fails succeeded")
	}
	if stalls.looks.Load() <= int64(stalls.free) {
		t.Fatalf("the wait looked %d times: no look was cut short", stalls.looks.Load())
	}
	for _, want := range []string{"was not ready in time", "service api (", "api starting"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
	if left := leftovers(t, composessh.ProjectName(id)); left != "" {
		t.Fatalf("the failed create left: %s", left)
	}
}
