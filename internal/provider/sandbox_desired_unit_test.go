package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// desired_state at plan time, with no harness: what can be stopped, and
// what a sandbox created stopped is planned to be.

func TestUnitSandboxPlan_stoppedNeedsServices(t *testing.T) {
	requireCLI(t)
	root := t.TempDir()
	credits := filepath.Join(t.TempDir(), "credits.json")
	if err := os.WriteFile(credits, []byte(`{"balance_usd": 100}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// A metered profile runs on local only.
	for profile, host := range map[string]string{"profile.workspace": "build", "profile.saas-stub": "local"} {
		t.Run(profile, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProviders,
				Steps: []resource.TestStep{{
					Config: buildProvider(root, fmt.Sprintf("  credits_file = %q", credits)) + fmt.Sprintf(`
resource "sandboxer_sandbox" "s" {
  profile       = %q
  host          = %q
  desired_state = "stopped"
}
`, profile, host),
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(`(?s)Sandbox Cannot Be Stopped.*no services to stop`),
				}},
			})
			rootStaysEmpty(t, root)
		})
	}
}

func TestUnitSandboxPlan_desiredStateIsChecked(t *testing.T) {
	requireCLI(t)
	root := t.TempDir()
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{
			Config:      planConfig(t, root, "services:\n  web:\n    image: busybox\n", `  desired_state = "paused"`),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`(?s)desired_state.*value must be one of`),
		}},
	})
	rootStaysEmpty(t, root)
}

func TestUnitSandboxPlan_createdStopped(t *testing.T) {
	requireCLI(t)
	root := t.TempDir()
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{
			Config:             planConfig(t, root, "services:\n  web:\n    image: busybox\n    ports: [\"80\"]\n", `  desired_state = "stopped"`),
			PlanOnly:           true,
			ExpectNonEmptyPlan: true,
			ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
				plancheck.ExpectKnownValue("sandboxer_sandbox.stack", tfjsonpath.New("status"), knownvalue.StringExact("stopped")),
				plancheck.ExpectKnownValue("sandboxer_sandbox.stack", tfjsonpath.New("endpoints"), knownvalue.MapExact(map[string]knownvalue.Check{})),
				plancheck.ExpectKnownValue("sandboxer_sandbox.stack", tfjsonpath.New("services").AtSliceIndex(0).AtMapKey("name"), knownvalue.StringExact("web")),
			}},
		}},
	})
	rootStaysEmpty(t, root)
}
