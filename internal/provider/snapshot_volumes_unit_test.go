package provider

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// Volume arguments are checked by the plan: volumes named while
// include_volumes is false, and volumes asked of a sandbox that is not a
// compose one (a workspace sandbox on a local host, no docker needed);
// include_volumes follows the profile when unset, known at plan time.
func TestUnitSnapshotPlan_volumes(t *testing.T) {
	requireCLI(t)
	root := t.TempDir()
	base := fmt.Sprintf(`
provider "sandboxer" {
  host {
    name     = "build"
    local    = true
    root_dir = %q
  }
}

resource "sandboxer_sandbox" "ws" {
  profile = "profile.workspace"
  host    = "build"
}
`, root)
	snapshot := func(args string) string {
		return base + `
resource "sandboxer_snapshot" "s" {
  sandbox_id = sandboxer_sandbox.ws.id
  name       = "s"
` + args + `
}
`
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{
			Config: base,
		}, {
			Config:      snapshot(`  include_volumes = false` + "\n" + `  volumes = ["db-data"]`),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`Volumes Without include_volumes`),
		}, {
			Config:      snapshot(`  volumes = ["not a name"]`),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`must be a compose volume name`),
		}, {
			Config:      snapshot(`  include_volumes = true`),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`(?s)No Volumes to Capture.*not a compose sandbox`),
		}, {
			Config: snapshot(""),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectKnownValue("sandboxer_snapshot.s", tfjsonpath.New("include_volumes"), knownvalue.Bool(false)),
			}},
		}},
	})
}
