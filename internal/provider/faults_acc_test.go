package provider

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// Unreachable is not gone: a refresh against a host whose sshd is down
// fails naming the host and plans nothing, and once the host is back the
// sandbox is still there, unchanged, and destroy leaves nothing.
func TestAccSandbox_unreachableHostIsNotGone(t *testing.T) {
	testAccPreCheck(t)
	sshd := testharness.StartPrivateSSHD(t)
	h := newAccHost(t)
	repo := t.TempDir()
	if err := os.WriteFile(repo+"/README.txt", []byte("fixture\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	config := privateSSHDConfig(t, sshd, "flaky", h.rootDir) + fmt.Sprintf(`
resource "sandboxer_sandbox" "ws" {
  profile = "profile.workspace"
  host    = "flaky"
  inputs  = { repo = %q }
}
`, repo)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             h.checkNothingLeft(t),
		Steps: []resource.TestStep{
			{Config: config},
			{
				PreConfig:   sshd.Stop,
				Config:      config,
				PlanOnly:    true,
				ExpectError: wrapped(`Unable to Read Sandbox[\s\S]*host "flaky"`),
			},
			{
				PreConfig: sshd.Start,
				Config:    config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
			},
		},
	})
}

// Load: 40 compose sandboxes in one apply at -parallelism=20 on one host.
// Past about 30, dockerd's default address pools run out; each sandbox's
// network gets a /27 of the host's network pool instead.
func TestAccSandbox_fortyComposeSandboxes(t *testing.T) {
	testAccPreCheck(t)
	testharness.Alone(t) // it counts every network of the host's pool
	testharness.RequireDocker(t)
	h := newAccHost(t)
	repo := testharness.ComposeRepo(t, testharness.Image(t), "app")
	t.Setenv("TF_CLI_ARGS_apply", "-parallelism=20")
	t.Setenv("TF_CLI_ARGS_destroy", "-parallelism=20")
	config := h.providerConfig(t) + fmt.Sprintf(`
resource "sandboxer_sandbox" "fleet" {
  count   = 40
  profile = "profile.compose-e2e"
  host    = "harness"
  inputs  = { repo = %q }
}
`, repo)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             h.checkNothingLeft(t),
		Steps: []resource.TestStep{{
			Config: config,
			Check: func(s *terraform.State) error {
				ids, projects := map[string]bool{}, map[string]bool{}
				for i := 0; i < 40; i++ {
					addr := fmt.Sprintf("sandboxer_sandbox.fleet.%d", i)
					ids[stateAttr(s, addr, "id")] = true
					projects[stateAttr(s, addr, "compose_project")] = true
					if st := stateAttr(s, addr, "status"); st != "ready" {
						return fmt.Errorf("%s is %s", addr, st)
					}
				}
				if len(ids) != 40 || len(projects) != 40 {
					return fmt.Errorf("%d distinct ids, %d distinct projects, want 40 each", len(ids), len(projects))
				}
				// Every sandbox network has a /27 of the default pool, none shared.
				out, err := exec.Command("sh", "-c", `docker network inspect --format '{{index .Labels "com.docker.compose.project"}} {{range .IPAM.Config}}{{.Subnet}}{{end}}' $(docker network ls -q --filter label=com.docker.compose.project)`).Output()
				if err != nil {
					return fmt.Errorf("docker network inspect: %v", err)
				}
				subnets := map[string]bool{}
				for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
					project, subnet, _ := strings.Cut(line, " ")
					if !projects[project] {
						continue
					}
					if !strings.HasPrefix(subnet, "10.213.") || !strings.HasSuffix(subnet, "/27") || subnets[subnet] {
						return fmt.Errorf("network of %s has subnet %q (duplicate: %v)", project, subnet, subnets[subnet])
					}
					subnets[subnet] = true
				}
				if len(subnets) != 40 {
					return fmt.Errorf("%d sandbox networks, want 40", len(subnets))
				}
				return nil
			},
		}, {
			// The inventory says how many more fit: 2048 /27s in 10.213.0.0/16.
			Config: config + `
data "sandboxer_host_inventory" "h" {
  host = "harness"
}
`,
			Check: func(s *terraform.State) error {
				// What docker holds in the pool (these 40, and anything else
				// on the host), plus what is free, is the pool.
				out, err := exec.Command("sh", "-c", `docker network inspect --format '{{range .IPAM.Config}}{{println .Subnet}}{{end}}' $(docker network ls -q)`).Output()
				if err != nil {
					return fmt.Errorf("docker network inspect: %v", err)
				}
				inPool := strings.Count(string(out), "10.213.")
				free := stateAttr(s, "data.sandboxer_host_inventory.h", "free_sandbox_networks")
				if inPool < 40 || free != strconv.Itoa(2048-inPool) {
					return fmt.Errorf("free_sandbox_networks = %s with %d networks of 10.213.0.0/16 on the host, want %d", free, inPool, 2048-inPool)
				}
				return nil
			},
		}},
	})
}

// sshd killed during an apply of several compose sandboxes, then back: the
// apply fails, nothing is forgotten (a create whose cleanup could not reach
// the host is kept tainted), the next apply converges, and destroy leaves
// nothing on the host.
func TestAccSandbox_sshdKilledMidApply(t *testing.T) {
	testAccPreCheck(t)
	testharness.RequireDocker(t)
	sshd := testharness.StartPrivateSSHD(t)
	h := newAccHost(t)
	repo := testharness.ComposeRepo(t, testharness.Image(t), "web")
	config := privateSSHDConfig(t, sshd, "flaky", h.rootDir) + fmt.Sprintf(`
resource "sandboxer_sandbox" "s" {
  count   = 4
  profile = "profile.compose-e2e"
  host    = "flaky"
  inputs  = { repo = %q }
}
`, repo)
	killed := make(chan struct{})
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             h.checkNothingLeft(t),
		Steps: []resource.TestStep{
			{
				// Killed as soon as the first sandbox exists on the host.
				PreConfig: func() {
					go func() {
						defer close(killed)
						deadline := time.Now().Add(2 * time.Minute)
						for time.Now().Before(deadline) {
							if found, _ := filepath.Glob(filepath.Join(h.rootDir, ".sandboxer", "sandboxes", "*.json")); len(found) > 0 {
								sshd.Stop()
								return
							}
							time.Sleep(20 * time.Millisecond)
						}
					}()
				},
				Config:      config,
				ExpectError: wrapped(`Unable to Create Sandbox[\s\S]*flaky`),
			},
			{
				PreConfig: func() {
					<-killed
					sshd.Start()
				},
				Config: config,
				Check: func(s *terraform.State) error {
					for i := range 4 {
						if st := stateAttr(s, fmt.Sprintf("sandboxer_sandbox.s.%d", i), "status"); st != "ready" {
							return fmt.Errorf("sandbox %d is %q after the second apply", i, st)
						}
					}
					return nil
				},
			},
		},
	})
}
