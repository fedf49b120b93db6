package composessh_test

import (
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/composessh"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// A sandbox restored from a snapshot, whose compose file exists only in the
// restored workspace, gets its network's subnet from the host's pool like
// a sandbox created from a repo: restores count toward what a host holds.
func TestRestoredStackGetsPoolSubnets(t *testing.T) {
	testharness.RequireDocker(t)
	h := testharness.SSHHost(t)
	reg := backends.NewRegistry(composessh.New(os.Getenv("SANDBOXER_COMPOSE_CMD")))
	repo := testharness.ComposeRepo(t, testharness.Image(t), "web")
	src, err := reg.Create(ctx(t), backends.Request{ID: backends.NewID(), Profile: profile(t), Host: h,
		Inputs: map[string]string{"repo": repo}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Destroy(ctx(t), h, src.ID) })
	snapID := "snap-" + backends.NewID()
	if _, err := reg.Snapshot(ctx(t), h, backends.SnapshotRequest{ID: snapID, SandboxID: src.ID}); err != nil {
		t.Fatal(err)
	}
	restored, _, err := reg.RestoreNew(ctx(t), h, snapID, backends.Request{ID: backends.NewID(), Profile: profile(t), Host: h})
	if err != nil {
		t.Fatal(err)
	}
	if !restored.NetworkOverride || strings.Join(restored.Services, ",") != "web" {
		t.Fatalf("restored record: network override %v, services %v", restored.NetworkOverride, restored.Services)
	}
	out, err := exec.Command("docker", "network", "inspect", "-f", "{{range .IPAM.Config}}{{.Subnet}}{{end}}",
		restored.ComposeProject+"_default").CombinedOutput()
	if err != nil {
		t.Fatalf("docker network inspect: %v %s", err, out)
	}
	subnet, err := netip.ParsePrefix(strings.TrimSpace(string(out)))
	if err != nil || subnet.Bits() != 27 || !composessh.DefaultNetworkPool.Contains(subnet.Addr()) {
		t.Fatalf("restored stack's network subnet %q (%v): want a /27 of %s", out, err, composessh.DefaultNetworkPool)
	}
	if err := reg.Destroy(ctx(t), h, restored.ID); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(t, restored.ComposeProject); left != "" {
		t.Fatalf("teardown left: %s", left)
	}
}
