package provider

import (
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// A pool of three SSH host blocks (the harness's two sshd, three root
// directories) of different sizes, one already running a sandbox pinned to
// it: six compose sandboxes of one apply fill the pool exactly, each
// running on the host its state names; a seventh is refused at plan time;
// destroy leaves nothing on any of them.
func TestAccPools_sshHosts(t *testing.T) {
	testAccPreCheck(t)
	h := newAccHost(t)
	h3 := accHostAt(t, t.TempDir(), "", "")
	root3 := h3.rootDir
	repo := testharness.ComposeRepo(t, testharness.Image(t), "web")
	// The three host blocks share one docker engine: each gets network
	// addresses of its own, as hosts sharing an engine should.
	ssh := func(name, addrVar, root string, max int, networks string) string {
		return fmt.Sprintf(`
  host {
    name             = %q
    address          = %q
    user             = %q
    private_key_file = %q
    known_hosts_file = %q
    root_dir         = %q
    pool             = "ci"
    max_sandboxes    = %d
    network_pool     = %q
  }`, name, testharness.Env(t, addrVar), testharness.Env(t, "SANDBOXER_TEST_SSH_USER"),
			testharness.Env(t, "SANDBOXER_TEST_SSH_KEY"), testharness.Env(t, "SANDBOXER_TEST_KNOWN_HOSTS"), root, max, networks)
	}
	config := func(n int) string {
		return fmt.Sprintf(`
provider "sandboxer" {%s%s%s
}

resource "sandboxer_sandbox" "pinned" {
  profile = "profile.compose-e2e"
  host    = "b3"
  inputs  = { repo = %q }
}

resource "sandboxer_sandbox" "pooled" {
  count     = %d
  profile   = "profile.compose-e2e"
  host_pool = "ci"
  inputs    = { repo = %q }
}
`, ssh("b1", "SANDBOXER_TEST_SSH_ADDR", h.rootDir, 1, "10.231.0.0/20"), ssh("b2", "SANDBOXER_TEST_SSH_ADDR2", h.rootDir2, 2, "10.231.16.0/20"),
			ssh("b3", "SANDBOXER_TEST_SSH_ADDR", root3, 4, "10.231.32.0/20"), repo, n, repo)
	}
	placed := func(s *terraform.State) error {
		got := map[string]int{}
		for i := range 6 {
			addr := fmt.Sprintf("sandboxer_sandbox.pooled.%d", i)
			host, project := stateAttr(s, addr, "host"), stateAttr(s, addr, "compose_project")
			got[host]++
			// Running where its state says: under that host's root.
			out, err := exec.Command("docker", "ps", "--filter", "label=com.docker.compose.project="+project,
				"--format", `{{.Label "com.docker.compose.project.working_dir"}}`).Output()
			root := map[string]string{"b1": h.rootDir, "b2": h.rootDir2, "b3": root3}[host]
			if err != nil || root == "" || !strings.HasPrefix(strings.TrimSpace(string(out)), root+"/") {
				return fmt.Errorf("%s (host %q) runs in %q (%v), want under %s", addr, host, out, err, root)
			}
		}
		if got["b1"] != 1 || got["b2"] != 2 || got["b3"] != 3 {
			return fmt.Errorf("pooled sandboxes per host %v, want b1 1, b2 2, b3 3 (each host to its max_sandboxes)", got)
		}
		return nil
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(s *terraform.State) error {
			if err := h.checkNothingLeft(t)(s); err != nil {
				return err
			}
			return h3.checkNothingLeft(t)(s)
		},
		Steps: []resource.TestStep{
			{Config: config(0)},
			{Config: config(6), Check: placed},
			{
				Config:      config(7),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)pool "ci" has no host that can take another sandbox:.*b1: full: 1 of 1.*b2: full: 2 of 2.*b3: full: 4 of 4`),
			},
		},
	})
}
