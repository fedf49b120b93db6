package swarm

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// The host's reaper removes an expired swarm sandbox's stack (services,
// network, the manager's volume), not only its record and workspace.
func TestReaperRemovesExpiredStack(t *testing.T) {
	sw := testharness.StartedSwarm(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h := sw.Host()
	p := profile(t)
	repo := t.TempDir()
	compose := "services:\n  app:\n    image: " + testharness.Image(t) +
		"\n    command: [\"sh\", \"-c\", \"trap 'exit 0' TERM; while true; do sleep 1; done\"]\n    volumes: [data:/data]\nvolumes:\n  data: {}\n"
	if err := os.WriteFile(filepath.Join(repo, "compose.yaml"), []byte(compose), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := backends.NewRegistry(New())
	sb, err := reg.Create(ctx, backends.Request{ID: backends.NewID(), Profile: p, Host: h, Inputs: map[string]string{"repo": repo},
		TTL: time.Second, TTLText: "1s"})
	if err != nil {
		t.Fatal(err)
	}
	stack := StackName(sb.ID)
	t.Cleanup(func() { _ = New().Teardown(context.Background(), h, sb) })
	// The reaper compares whole seconds: past the expiry's second.
	for time.Now().UTC().Truncate(time.Second).Compare(sb.ExpiresAt.Add(time.Second)) <= 0 {
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	reaped, err := reg.Reap(ctx, h)
	if err != nil || !slices.Equal(reaped, []string{sb.ID}) {
		t.Fatalf("reaped %v (%v), want %s", reaped, err, sb.ID)
	}
	filter := "label=com.docker.stack.namespace=" + stack
	for _, k := range [][]string{{"service", "ls", "-q"}, {"network", "ls", "-q"}, {"ps", "-aq"}, {"volume", "ls", "-q"}} {
		out, err := sw.Docker(1, append(k, "--filter", filter)...)
		if err != nil || strings.TrimSpace(out) != "" {
			t.Errorf("docker %s after the reaper: %q %v", strings.Join(k, " "), out, err)
		}
	}
	if _, err := os.Stat(sb.WorkspaceDir); !os.IsNotExist(err) {
		t.Errorf("the reaped workspace remains: %v", err)
	}
}
