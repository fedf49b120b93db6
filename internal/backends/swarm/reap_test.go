package swarm

import (
	"context"
	"os"
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
	sb, h, _ := createStack(ctx, t, sw, "services:\n  app:\n    image: "+testharness.Image(t)+"\n    command: "+spin+
		"\n    volumes: [data:/data]\nvolumes:\n  data: {}\n", time.Second)
	stack := StackName(sb.ID)
	// The reaper compares whole seconds: past the expiry's second.
	for time.Now().UTC().Truncate(time.Second).Compare(sb.ExpiresAt.Add(time.Second)) <= 0 {
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	reaped, err := backends.NewRegistry(New()).Reap(ctx, h)
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
