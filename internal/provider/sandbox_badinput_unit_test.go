package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// The sandbox's plan-time rules that need no compose file, on local hosts
// only: no harness, no docker, no SSH. Each bad input is an error at plan
// time naming what is wrong, and the host's root directory stays empty.
func TestUnitSandboxPlan_badInput(t *testing.T) {
	requireCLI(t)
	empty := t.TempDir()
	repo := t.TempDir()
	if err := os.WriteFile(filepath.Join(repo, "docker-compose.yml"), []byte("services:\n  web:\n    image: busybox\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	credits := filepath.Join(t.TempDir(), "credits.json")
	if err := os.WriteFile(credits, []byte(`{"balance_usd": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		provider, resource string
		want               string
	}{
		"unknown profile":      {resource: `profile = "profile.nope"`, want: `Unknown Profile[\s\S]*profile.workspace`},
		"unknown host":         {resource: `profile = "profile.workspace"` + "\n" + `host = "mars"`, want: `Unknown Host[\s\S]*"mars"`},
		"missing repo":         {resource: compose(empty + "/nope"), want: `not a\s+readable\s+directory`},
		"no compose file":      {resource: compose(empty), want: `no compose file`},
		"repo with ..":         {resource: compose(repo + "/../x"), want: `contains "\.\."`},
		"compose_file with ..": {resource: `profile = "profile.compose-e2e"` + "\n" + fmt.Sprintf(`inputs = { repo = %q, compose_file = "../docker-compose.yml" }`, repo), want: `contains "\.\."`},
		"unknown input":        {resource: `profile = "profile.workspace"` + "\n" + `inputs = { rpeo = "/tmp" }`, want: `unknown input "rpeo"`},
		"bad env name":         {resource: `profile = "profile.workspace"` + "\n" + `env = { "1BAD" = "x" }`, want: `Invalid Sandbox Env`},
		"ttl not a duration":   {resource: `profile = "profile.workspace"` + "\n" + `ttl = "soon"`, want: `Invalid TTL[\s\S]*"soon"`},
		"ttl not positive":     {resource: `profile = "profile.workspace"` + "\n" + `ttl = "-1h"`, want: `Invalid TTL`},
		"credits short": {
			provider: fmt.Sprintf("credits_file = %q", credits),
			resource: `profile = "profile.saas-stub"` + "\n" + `ttl = "1000h"`,
			want:     `Unable to Place Sandbox[\s\S]*credits are short`,
		},
		"metered without credits_file": {
			resource: `profile = "profile.saas-stub"` + "\n" + `ttl = "1h"`,
			want:     `credits_file`,
		},
		"unreadable key, on that host": {
			provider: "host {\n    name = \"keyless\"\n    address = \"127.0.0.1:22\"\n    user = \"root\"\n    private_key_file = \"/nonexistent/id_ed25519\"\n  }",
			resource: `profile = "profile.workspace"` + "\n" + `host = "keyless"`,
			want:     `Unknown Host[\s\S]*"keyless" cannot be used[\s\S]*host\[1\]\.private_key_file[\s\S]*unable to read\s+private_key_file`,
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProviders,
				Steps: []resource.TestStep{{
					Config: fmt.Sprintf(`
provider "sandboxer" {
  default_host = "build"
  host {
    name     = "build"
    local    = true
    root_dir = %q
  }
  %s
}

resource "sandboxer_sandbox" "s" {
  %s
}
`, root, c.provider, c.resource),
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(c.want),
				}},
			})
			rootStaysEmpty(t, root)
		})
	}
}

func compose(repo string) string {
	return `profile = "profile.compose-e2e"` + "\n" + fmt.Sprintf(`inputs = { repo = %q }`, repo)
}

// A broken host block fails only what uses it: a plan on other hosts goes
// on (with a warning naming the block).
func TestUnitSandboxPlan_brokenHostBlockElsewhere(t *testing.T) {
	requireCLI(t)
	root := t.TempDir()
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf(`
provider "sandboxer" {
  host {
    name     = "build"
    local    = true
    root_dir = %q
  }
  host {
    name             = "keyless"
    address          = "127.0.0.1:22"
    user             = "root"
    private_key_file = "/nonexistent/id_ed25519"
  }
}

resource "sandboxer_sandbox" "s" {
  profile = "profile.workspace"
  host    = "build"
}
`, root),
			PlanOnly:           true,
			ExpectNonEmptyPlan: true,
		}},
	})
	rootStaysEmpty(t, root)
}
