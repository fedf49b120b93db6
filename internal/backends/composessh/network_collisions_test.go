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

// Subnets are chosen from what a provider process listed once, so they can
// collide with what appeared since: a reservation another process wrote in
// the same root, or a docker network made outside the provider. Either
// way the create lists again, chooses again and succeeds, and no two
// networks share a subnet. Two registries stand for two provider processes.
func TestNetworkCollisionsChooseAgain(t *testing.T) {
	testharness.RequireDocker(t)
	h := testharness.SSHHost(t)
	pool := netip.MustParsePrefix("10.216.0.0/24")
	process := func() *backends.Registry {
		e := composessh.New(os.Getenv("SANDBOXER_COMPOSE_CMD"))
		e.NetworkPools[h.Host()] = pool
		return backends.NewRegistry(e)
	}
	a, b := process(), process()
	repo := testharness.ComposeRepo(t, testharness.Image(t), "web")
	create := func(reg *backends.Registry) string {
		t.Helper()
		sb, err := reg.Create(ctx(t), backends.Request{ID: backends.NewID(), Profile: profile(t), Host: h,
			Inputs: map[string]string{"repo": repo}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := reg.Destroy(ctx(t), h, sb.ID); err != nil {
				t.Error(err)
			}
			if left := leftovers(t, sb.ComposeProject); left != "" {
				t.Errorf("teardown left: %s", left)
			}
		})
		out, err := exec.Command("docker", "network", "inspect", "-f", "{{range .IPAM.Config}}{{.Subnet}}{{end}}",
			sb.ComposeProject+"_default").CombinedOutput()
		if err != nil {
			t.Fatalf("docker network inspect: %v %s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	got := []string{
		create(a), // a lists the host: nothing taken
		create(b), // b lists: a's
		create(a), // a still believes b's subnet free: the reservation refuses it
	}
	// A network of another root in the next free subnet, made behind a's back.
	other := "sandboxer-test-other-" + backends.NewID()
	if out, err := exec.Command("docker", "network", "create", "--subnet", "10.216.0.96/27", other).CombinedOutput(); err != nil {
		t.Fatalf("docker network create: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "network", "rm", other).Run() }) // best effort
	got = append(got, create(a))                                                   // docker refuses the overlap
	want := []string{"10.216.0.0/27", "10.216.0.32/27", "10.216.0.64/27", "10.216.0.128/27"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("subnets %v, want %v", got, want)
	}
}
