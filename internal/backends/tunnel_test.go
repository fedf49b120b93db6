package backends_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/swarm"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/vmattach"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// Sandboxes of extensions that cannot open tunnels say so plainly, before
// anything is asked of the host: a workspace runs no services, and a swarm
// stack's tasks are reached through a published port.
func TestTunnelRefusedWithoutServiceAddresses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h := testharness.LocalHost(t)
	reg := backends.NewRegistry(vmattach.New(), swarm.New())

	ws, err := reg.Create(ctx, backends.Request{ID: backends.NewID(), Profile: profile(t, "profile.workspace"), Host: h})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Destroy(context.Background(), h, ws.ID) })
	_, err = reg.OpenTunnel(ctx, h, ws.ID, "web", 80, 0)
	if err == nil || !strings.Contains(err.Error(), "runs no services to open a tunnel to") {
		t.Errorf("workspace: got %v", err)
	}

	// A swarm sandbox's record as its extension writes it (making the
	// stack itself needs the swarm harness, and the refusal reads nothing
	// else).
	id := backends.NewID()
	backends.PlantRecord(t, h.RootDir, id, backends.Sandbox{ID: id, Host: h.Host(), Profile: "profile.swarm-e2e", Extension: swarm.Name,
		WorkspaceDir: filepath.Join(h.RootDir, id), ComposeProject: swarm.StackName(id), ComposeFile: "compose.yaml",
		Services: []string{"web"}, CreatedAt: time.Now()}, nil)
	_, err = reg.OpenTunnel(ctx, h, id, "web", 80, 0)
	if err == nil || !strings.Contains(err.Error(), "tunnels are not supported for ext.swarm sandboxes") ||
		!strings.Contains(err.Error(), "connect to the published port instead") {
		t.Errorf("swarm: got %v", err)
	}
}
