package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// Host policy and limits at plan time, with no harness: a local host whose
// root directory must stay empty.

// ruledConfig is planConfig's sandbox on a host block carrying hostExtra.
func ruledConfig(t *testing.T, root, compose, hostExtra, sandboxExtra string) string {
	t.Helper()
	repo := t.TempDir()
	if err := os.WriteFile(filepath.Join(repo, "compose.yaml"), []byte(compose), 0o644); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`
provider "sandboxer" {
  host {
    name     = "build"
    local    = true
    root_dir = %q
%s
  }
}

resource "sandboxer_sandbox" "stack" {
  profile = "profile.compose-e2e"
  host    = "build"
  inputs  = { repo = %q }
%s
}
`, root, hostExtra, repo, sandboxExtra)
}

// inOrder matches the fragments in order, each as written but for where
// the CLI wraps a line.
func inOrder(fragments ...string) *regexp.Regexp {
	var parts []string
	for _, f := range fragments {
		parts = append(parts, strings.Join(strings.Fields(regexp.QuoteMeta(f)), `\s+`))
	}
	return regexp.MustCompile(`(?s)` + strings.Join(parts, ".*"))
}

func TestUnitSandboxPolicy_planTime(t *testing.T) {
	requireCLI(t)
	privileged := "services:\n  ci:\n    image: busybox\n    privileged: true\n    volumes: [\"/var/run/docker.sock:/var/run/docker.sock\"]\n"
	cases := map[string]struct {
		compose, host, sandbox string
		want                   *regexp.Regexp // nil: the plan succeeds
		policy                 string         // the planned policy, when it succeeds
	}{
		"baseline host refuses, every finding at once": {
			compose: privileged, host: `policy = "baseline"`,
			want: inOrder(`line 4: service "ci": privileged: true`, `refused by policy "baseline"`, `line 5: service "ci": bind mount /var/run/docker.sock`),
		},
		"a sandbox tightens a trusted host": {
			compose: privileged, sandbox: `policy = "baseline"`,
			want: inOrder(`privileged: true`, `refused by policy "baseline"`),
		},
		"trusted plans with warnings": {
			compose: privileged, policy: "trusted",
		},
		"a sandbox cannot loosen its host": {
			compose: "services:\n  web:\n    image: busybox\n", host: `policy = "restricted"`, sandbox: `policy = "baseline"`,
			want: inOrder(`Policy Looser Than the Host's`, `policy "baseline" is looser than host "build"'s "restricted"`),
		},
		"the host's policy is the default": {
			compose: "services:\n  web:\n    image: busybox\n    user: \"1000\"\n", host: `policy = "restricted"`, policy: "restricted",
		},
		"restricted requires a non-root user": {
			compose: "services:\n  web:\n    image: busybox\n", host: `policy = "restricted"`,
			want: inOrder(`service "web": user "": the restricted policy requires a non-root user`),
		},
		"above max_limits": {
			compose: "services:\n  web:\n    image: busybox\n    mem_limit: 4g\n",
			host:    `max_limits = { memory = "1g" }`,
			want:    inOrder(`memory limit 4GiB is above the host's max_limits.memory 1GiB`),
		},
		"a size that is none": {
			compose: "services:\n  web:\n    image: busybox\n", host: `default_limits = { memory = "two gigs" }`,
			want: inOrder(`Invalid Size`, `"two gigs" is not a size`),
		},
		"defaults above the maximums": {
			compose: "services:\n  web:\n    image: busybox\n", host: `default_limits = { cpus = 4 }` + "\n" + `max_limits = { cpus = 2 }`,
			want: inOrder(`default_limits.cpus is above max_limits.cpus`),
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			step := resource.TestStep{Config: ruledConfig(t, root, c.compose, c.host, c.sandbox), PlanOnly: true, ExpectError: c.want}
			if c.want == nil {
				step.ExpectNonEmptyPlan = true
				step.ConfigPlanChecks = resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue("sandboxer_sandbox.stack", tfjsonpath.New("policy"), knownvalue.StringExact(c.policy)),
				}}
			}
			resource.UnitTest(t, resource.TestCase{ProtoV6ProviderFactories: testAccProviders, Steps: []resource.TestStep{step}})
			rootStaysEmpty(t, root)
		})
	}
}

// Hosts of one pool must share their rules: a sandbox is planned before the
// pool picks its host.
func TestUnitSandboxPolicy_poolHostsShareRules(t *testing.T) {
	requireCLI(t)
	root := t.TempDir()
	resource.UnitTest(t, resource.TestCase{ProtoV6ProviderFactories: testAccProviders, Steps: []resource.TestStep{{
		Config: fmt.Sprintf(`
provider "sandboxer" {
  host {
    name     = "a"
    local    = true
    root_dir = %q
    pool     = "ci"
    policy   = "baseline"
  }
  host {
    name     = "b"
    local    = true
    root_dir = %q
    pool     = "ci"
  }
}
data "sandboxer_profile" "p" { name = "profile.workspace" }
`, root, root),
		PlanOnly:    true,
		ExpectError: inOrder(`Pool Hosts With Different Rules`, `hosts "a" and "b" of pool "ci"`),
	}}})
	rootStaysEmpty(t, root)
}
