package provider

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// sandboxer_command's plan-time rules, with no harness: bad input is an
// error in the plan, before anything reaches a host.
func TestUnitCommand_badInput(t *testing.T) {
	requireCLI(t)
	root := t.TempDir()
	for name, c := range map[string]struct{ args, want string }{
		"empty command":       {`command = []`, `(?s)command.*list must contain at least 1 elements`},
		"empty program":       {`command = [""]`, `(?s)command.*length must be at least 1`},
		"timeout not a time":  {`command = ["true"]` + "\n" + `timeout = "soon"`, `(?s)Invalid Duration.*"soon" is not a positive duration`},
		"negative timeout":    {`command = ["true"]` + "\n" + `timeout = "-1m"`, `(?s)Invalid Duration`},
		"sandbox id injected": {`command = ["true"]`, `(?s)Invalid Id.*"x; touch /tmp/p" is not a sandbox id`},
	} {
		t.Run(name, func(t *testing.T) {
			id := "0123456789ab"
			if name == "sandbox id injected" {
				id = "x; touch /tmp/p"
			}
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProviders,
				Steps: []resource.TestStep{{
					Config: buildProvider(root, "") + fmt.Sprintf(`
resource "sandboxer_command" "c" {
  host       = "build"
  sandbox_id = %q
  service    = "web"
  %s
}
`, id, c.args),
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(c.want),
				}},
			})
			rootStaysEmpty(t, root)
		})
	}
}

// A command for a sandbox that is not (yet) on its host plans: it may be
// created by the same apply; the apply says so if it is not.
func TestUnitCommand_unknownSandboxPlans(t *testing.T) {
	requireCLI(t)
	root := t.TempDir()
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{
			Config: buildProvider(root, "") + `
resource "sandboxer_command" "c" {
  host       = "build"
  sandbox_id = "0123456789ab"
  service    = "web"
  command    = ["true"]
}
`,
			PlanOnly:           true,
			ExpectNonEmptyPlan: true,
		}},
	})
	rootStaysEmpty(t, root)
}
