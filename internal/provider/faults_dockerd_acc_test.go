package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// The docker engine restarted during an apply of several compose
// sandboxes (on an engine of the test's own, reached through an sshd of
// its own whose sessions get DOCKER_HOST): the apply fails, nothing is
// forgotten, the next apply converges (sandboxes the restart stopped are
// replaced), and destroy leaves nothing in the engine (containers,
// networks, volumes) nor in the root directory (workspaces, records,
// network reservations).
func TestAccSandbox_dockerdRestartedMidApply(t *testing.T) {
	testAccPreCheck(t)
	engine := testharness.StartPrivateDockerd(t)
	sshd := testharness.StartPrivateSSHD(t, "SetEnv DOCKER_HOST="+engine.DockerHost)
	root := t.TempDir()
	gate := t.TempDir()
	repo := faultComposeRepo(t, gate)
	config := fmt.Sprintf(`
provider "sandboxer" {
  host {
    name             = "engine"
    address          = %q
    user             = %q
    private_key_file = %q
    host_key         = %q
    root_dir         = %q
    network_pool     = "10.214.0.0/16"
  }
}

resource "sandboxer_sandbox" "s" {
  count   = 3
  profile = "profile.compose-e2e"
  host    = "engine"
  inputs  = { repo = %q }
}
`, sshd.Addr, testharness.Env(t, "SANDBOXER_TEST_SSH_USER"), testharness.Env(t, "SANDBOXER_TEST_SSH_KEY"), sshd.HostKey(), root, repo)
	restarted := make(chan error, 1)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(*terraform.State) error {
			left := append(engine.Leftovers(), rootLeftovers(root)...)
			if len(left) > 0 {
				return fmt.Errorf("destroy left: %s", strings.Join(left, ", "))
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				// Restarted once the first sandbox's service runs (not ready:
				// the gate is closed), then the gate opens for the others.
				PreConfig: func() {
					go func() {
						err := waitFor(2*time.Minute, "a container in the private engine", func() bool {
							out, _ := engine.Command("ps", "-q", "--filter", "status=running").Output() // not answering: not yet
							return len(strings.TrimSpace(string(out))) > 0
						})
						if err == nil {
							err = engine.Restart()
						}
						if werr := os.WriteFile(filepath.Join(gate, "open"), nil, 0o644); err == nil {
							err = werr
						}
						restarted <- err
					}()
				},
				Config:      config,
				ExpectError: wrapped(`Unable to Create Sandbox`),
			},
			{
				PreConfig: func() {
					if err := <-restarted; err != nil {
						t.Fatal(err)
					}
				},
				Config: config,
				Check: func(s *terraform.State) error {
					for i := range 3 {
						addr := fmt.Sprintf("sandboxer_sandbox.s.%d", i)
						if st := stateAttr(s, addr, "status"); st != "ready" {
							return fmt.Errorf("%s is %q after the second apply", addr, st)
						}
						// Running in the private engine, on the host block's pool.
						out, err := engine.Command("network", "inspect", "--format", "{{range .IPAM.Config}}{{.Subnet}}{{end}}",
							stateAttr(s, addr, "compose_project")+"_default").Output()
						if err != nil || !strings.HasPrefix(string(out), "10.214.") {
							return fmt.Errorf("network of %s in the private engine: %q %v", addr, out, err)
						}
					}
					return nil
				},
			},
			{
				// Converged: nothing left to do.
				Config:   config,
				PlanOnly: true,
			},
		},
	})
}

// faultComposeRepo writes a compose project of one service, "app", with a
// named volume and a healthcheck. With gate (a directory on the host) the
// service is healthy only once the test creates gate/open, so the test
// decides when its sandboxes may become ready; without, at once.
func faultComposeRepo(t *testing.T, gate string) string {
	t.Helper()
	check, mount := `["CMD", "true"]`, ""
	if gate != "" {
		check, mount = `["CMD", "test", "-e", "/gate/open"]`, fmt.Sprintf("\n      - %s:/gate:ro", gate)
	}
	compose := fmt.Sprintf(`services:
  app:
    image: %s
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
    volumes:
      - data:/data%s
    healthcheck:
      test: %s
      interval: 1s
      retries: 100000
volumes:
  data: {}
`, testharness.Image(t), mount, check)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "docker-compose.yml"), []byte(compose), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// rootLeftovers is what a root directory holds of sandboxes: workspaces,
// records (and their temporary files), network reservations.
func rootLeftovers(root string) []string {
	var left []string
	entries, _ := os.ReadDir(root) // a missing root holds nothing
	for _, e := range entries {
		if e.Name() != ".sandboxer" {
			left = append(left, "workspace "+e.Name())
		}
	}
	for _, dir := range []string{"sandboxes", "networks"} {
		entries, _ := os.ReadDir(filepath.Join(root, ".sandboxer", dir)) // missing: nothing there
		for _, e := range entries {
			left = append(left, dir+"/"+e.Name())
		}
	}
	return left
}

// waitFor polls cond, an observable condition on the host, until it holds
// or timeout passes. Safe on any goroutine: it returns its failure.
func waitFor(timeout time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}
