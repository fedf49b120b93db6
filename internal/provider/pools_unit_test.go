package provider

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"golang.org/x/crypto/ssh"
)

// Host pools on three local hosts (no harness: workspace sandboxes in
// temporary root directories, through the real CLI): six sandboxes of one
// run fill the pool exactly, each host to its max_sandboxes (one host
// already holds a sandbox another pipeline made); the host is unknown at
// plan and chosen at create; a seventh is a plan-time error naming each
// host's count; a pool change never moves an existing sandbox.
func TestUnitPools_spreadFullAndStay(t *testing.T) {
	requireCLI(t)
	roots := map[string]string{"small": t.TempDir(), "medium": t.TempDir(), "large": t.TempDir()}
	// Another pipeline's sandbox on "large": its record counts.
	other := filepath.Join(roots["large"], ".sandboxer", "sandboxes")
	if err := os.MkdirAll(other, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "0123456789ab.json"), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := func(n, smallMax int) string {
		return fmt.Sprintf(`
provider "sandboxer" {
  host {
    name          = "small"
    local         = true
    root_dir      = %q
    pool          = "ci"
    max_sandboxes = %d
  }
  host {
    name          = "medium"
    local         = true
    root_dir      = %q
    pool          = "ci"
    max_sandboxes = 2
  }
  host {
    name          = "large"
    local         = true
    root_dir      = %q
    pool          = "ci"
    max_sandboxes = 4
    labels        = { size = "large" }
  }
}

resource "sandboxer_sandbox" "s" {
  count     = %d
  profile   = "profile.workspace"
  host_pool = "ci"
}
`, roots["small"], smallMax, roots["medium"], roots["large"], n)
	}
	perHost := func(want map[string]int) resource.TestCheckFunc {
		return func(s *terraform.State) error {
			got := map[string]int{}
			for _, rs := range s.RootModule().Resources {
				if rs.Type == "sandboxer_sandbox" {
					got[rs.Primary.Attributes["host"]]++
				}
			}
			for h, n := range want {
				if got[h] != n {
					return fmt.Errorf("sandboxes per host %v, want %v", got, want)
				}
			}
			return nil
		}
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{
				Config: config(6, 1),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectUnknownValue("sandboxer_sandbox.s[0]", tfjsonpath.New("host")),
				}},
				Check: perHost(map[string]int{"small": 1, "medium": 2, "large": 3}),
			},
			{
				Config:      config(7, 1),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)pool "ci" has no host that can take another sandbox:.*large: full: 4 of 4 sandboxes.*medium: full: 2 of 2 sandboxes.*small: full: 1 of 1 sandboxes`),
			},
			{
				// More room on "small": nothing moves there.
				Config:   config(6, 5),
				PlanOnly: true,
			},
			{
				// The sandbox on "small" lost its workspace out of band: in a
				// full pool, its replacement takes its place (placed again).
				PreConfig: func() {
					entries, err := os.ReadDir(roots["small"])
					for _, e := range entries {
						if e.Name() != ".sandboxer" {
							err = os.RemoveAll(filepath.Join(roots["small"], e.Name()))
						}
					}
					if err != nil {
						t.Fatal(err)
					}
				},
				Config: config(6, 1),
				Check:  perHost(map[string]int{"small": 1, "medium": 2, "large": 3}),
			},
		},
	})
}

// Plan-time rules of pools, nothing applied.
func TestUnitPools_planRules(t *testing.T) {
	requireCLI(t)
	root := t.TempDir()
	provider := fmt.Sprintf(`
provider "sandboxer" {
  host {
    name     = "a"
    local    = true
    root_dir = %q
    pool     = "ci"
    labels   = { gpu = "false" }
  }
}
`, root)
	cases := []struct {
		name, config string
		err          string
	}{
		{"host and host_pool", provider + `
resource "sandboxer_sandbox" "s" {
  profile   = "profile.workspace"
  host      = "a"
  host_pool = "ci"
}`, `(?s)"host_pool".*cannot be specified when .*"host"|(?s)Invalid Attribute Combination`},
		{"an unknown pool", provider + `
resource "sandboxer_sandbox" "s" {
  profile   = "profile.workspace"
  host_pool = "gpu"
}`, `pool "gpu" is not named by any host or cluster block \(pools: ci\)`},
		{"no host carries the labels", provider + `
resource "sandboxer_sandbox" "s" {
  profile     = "profile.workspace"
  host_pool   = "ci"
  host_labels = { gpu = "true" }
}`, `(?s)a: 0 sandboxes; labels do not match \(gpu=true\)`},
		{"host_labels with a host", provider + `
resource "sandboxer_sandbox" "s" {
  profile     = "profile.workspace"
  host        = "a"
  host_labels = { gpu = "false" }
}`, `(?s)host_labels choose among the hosts of a pool, but this sandbox goes to host\s+"a"`},
		{"a pool block without hosts", fmt.Sprintf(`
provider "sandboxer" {
  host {
    name     = "a"
    local    = true
    root_dir = %q
    pool     = "ci"
  }
  pool {
    name               = "cI"
    min_free_memory_mb = 10
  }
}
resource "sandboxer_sandbox" "s" {
  profile   = "profile.workspace"
  host_pool = "ci"
}`, root), `pool "cI": no host block names it`},
		{"a memory floor no host meets", fmt.Sprintf(`
provider "sandboxer" {
  host {
    name     = "a"
    local    = true
    root_dir = %q
    pool     = "ci"
  }
  pool {
    name               = "ci"
    min_free_memory_mb = 1000000000
  }
}
resource "sandboxer_sandbox" "s" {
  profile   = "profile.workspace"
  host_pool = "ci"
}`, root), `a: 0 sandboxes; \d+ MB of memory available, below the pool's floor of 1000000000 MB`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProviders,
				Steps: []resource.TestStep{{
					Config:      c.config,
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(c.err),
				}},
			})
			rootStaysEmpty(t, root)
		})
	}
}

// A pool host that cannot be reached is skipped (a warning), never fatal
// while another host can take the sandbox.
func TestUnitPools_unreachableHostSkipped(t *testing.T) {
	requireCLI(t)
	root := t.TempDir()
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf(`
provider "sandboxer" {
  host {
    name                     = "down"
    address                  = "127.0.0.1:1"
    user                     = "nobody"
    private_key              = %q
    insecure_ignore_host_key = true
    pool                     = "ci"
  }
  host {
    name     = "up"
    local    = true
    root_dir = %q
    pool     = "ci"
  }
}

resource "sandboxer_sandbox" "s" {
  profile   = "profile.workspace"
  host_pool = "ci"
}
`, testPrivateKeyPEM(t), root),
			Check: resource.TestCheckResourceAttr("sandboxer_sandbox.s", "host", "up"),
		}},
	})
}

// testPrivateKeyPEM is a fresh ed25519 private key in OpenSSH PEM form.
func testPrivateKeyPEM(t *testing.T) string {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(key, "")
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(block))
}
