package swarm

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// spin is a task's command that runs until it is stopped and then stops at
// once.
const spin = `["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]`

// createStack creates a sandbox of compose, with a ttl unless 0, on the
// harness swarm through a registry, as the provider does, and tears it
// down when the test ends. It returns the sandbox, the manager as its
// host, and the repo.
func createStack(ctx context.Context, t *testing.T, sw *testharness.Swarm, compose string, ttl time.Duration) (*backends.Sandbox, *hosts.Host, string) {
	t.Helper()
	repo := t.TempDir()
	if err := os.WriteFile(filepath.Join(repo, "compose.yaml"), []byte(compose), 0o644); err != nil {
		t.Fatal(err)
	}
	h := sw.Host()
	sb, err := backends.NewRegistry(New()).Create(ctx, backends.Request{ID: backends.NewID(), Profile: profile(t), Host: h,
		Inputs: map[string]string{"repo": repo}, TTL: ttl, TTLText: ttl.String()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = New().Teardown(context.Background(), h, sb) })
	return sb, h, repo
}

// A replicated service scaled out of band (`docker service scale` on the
// manager) is drift: the sandbox is degraded while another service still
// runs, stopped when nothing does, and ready again once scaled back. A
// refresh knows the declared replicas from the host's record alone.
func TestSwarmScaledOutOfBand(t *testing.T) {
	sw := testharness.StartedSwarm(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	img := testharness.Image(t)
	sb, h, repo := createStack(ctx, t, sw, "services:\n  web:\n    image: "+img+"\n    command: "+spin+
		"\n    deploy:\n      replicas: 2\n      placement:\n        max_replicas_per_node: 1\n"+
		"  keeper:\n    image: "+img+"\n    command: "+spin+"\n", 0)
	if want := map[string]int{"web": 2, "keeper": 1}; !maps.Equal(sb.Replicas, want) {
		t.Fatalf("recorded replicas %v, want %v", sb.Replicas, want)
	}
	stack := StackName(sb.ID)
	scale := func(services ...string) {
		t.Helper()
		args := []string{"service", "scale", "--detach"}
		for _, s := range services {
			args = append(args, stack+"_"+s)
		}
		if out, err := sw.Docker(1, args...); err != nil {
			t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// Refreshed as the next plan's provider process does it: a new
	// registry, the record on the host, no compose file on the client.
	if err := os.RemoveAll(repo); err != nil {
		t.Fatal(err)
	}
	refresh := func(want, services string) {
		t.Helper()
		got, st, err := backends.NewRegistry(New()).Refresh(ctx, h, sb.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got.Replicas, sb.Replicas) {
			t.Fatalf("the record read back has replicas %v, want %v", got.Replicas, sb.Replicas)
		}
		if st.State != want || backends.Describe(st.Services) != services {
			t.Fatalf("refresh: %s (%s), want %s (%s)", st.State, backends.Describe(st.Services), want, services)
		}
	}
	refresh(backends.StatusReady, "keeper=running, web=running")

	// The engine's desired count of web is 0 now: as the engine counts,
	// web runs all it should. Tasks being shut down are no longer meant
	// to run, so the very next look sees none.
	scale("web=0")
	refresh(backends.StatusDegraded, "keeper=running, web=stopped")
	scale("keeper=0")
	refresh(backends.StatusStopped, "keeper=stopped, web=stopped")

	scale("web=2", "keeper=1")
	if _, err := New().WaitReady(ctx, h, sb); err != nil {
		t.Fatal(err)
	}
	refresh(backends.StatusReady, "keeper=running, web=running")
}
