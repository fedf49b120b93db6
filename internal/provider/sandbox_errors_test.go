package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// badHostsConfig declares hosts that fail in each way a host can.
func (h accHost) badHostsConfig(t *testing.T) string {
	t.Helper()
	otherKey, err := os.ReadFile(strings.Replace(testharness.Env(t, "SANDBOXER_TEST_HOST_KEY"), "2222", "2223", 1))
	if err != nil {
		t.Fatal(err)
	}
	emptyKnownHosts := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(emptyKnownHosts, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := testharness.Env(t, "SANDBOXER_TEST_SSH_ADDR")
	key := testharness.Env(t, "SANDBOXER_TEST_SSH_KEY")
	return fmt.Sprintf(`
provider "sandboxer" {
  host {
    name             = "unreachable"
    address          = "127.0.0.1:1"
    user             = "root"
    private_key_file = %[2]q
    known_hosts_file = %[6]q
    root_dir         = %[5]q
  }
  host {
    name             = "reinstalled"
    address          = %[1]q
    user             = "root"
    private_key_file = %[2]q
    host_key         = %[3]q
    root_dir         = %[5]q
  }
  host {
    name             = "stranger"
    address          = %[1]q
    user             = "root"
    private_key_file = %[2]q
    known_hosts_file = %[4]q
    root_dir         = %[5]q
  }
}
`, addr, key, strings.TrimSpace(string(otherKey)), emptyKnownHosts, h.rootDir, testharness.Env(t, "SANDBOXER_TEST_KNOWN_HOSTS"))
}

// wrapped compiles an error pattern whose spaces also match the line breaks
// Terraform inserts when it wraps a diagnostic.
func wrapped(pattern string) *regexp.Regexp {
	return regexp.MustCompile(strings.ReplaceAll(pattern, " ", `\s+`))
}

func sandboxConfig(profile, host, inputs, env string) string {
	return fmt.Sprintf(`
resource "sandboxer_sandbox" "bad" {
  profile = %q
  host    = %q
  inputs  = %s
  env     = %s
}
`, profile, host, inputs, env)
}

// Bad input is refused at plan time, before anything reaches a host.
func TestAccSandbox_badInputAtPlanTime(t *testing.T) {
	testAccPreCheck(t)
	h := newAccHost(t)
	empty := t.TempDir()
	composeRepo := testharness.ComposeRepo(t, "sandboxer-busybox:latest", "app")
	cases := []struct {
		name, config, want string
	}{
		{"unknown profile", sandboxConfig("profile.nope", "local", "{}", "{}"), `Unknown Profile[\s\S]*profile.workspace`},
		{"unknown host", sandboxConfig("profile.workspace", "mars", "{}", "{}"), `Unknown Host[\s\S]*"mars"`},
		{"missing repo", sandboxConfig("profile.compose-e2e", "harness", fmt.Sprintf("{ repo = %q }", empty+"/nope"), "{}"), `not a readable[\s\S]*directory`},
		{"no compose file", sandboxConfig("profile.compose-e2e", "harness", fmt.Sprintf("{ repo = %q }", empty), "{}"), `no compose file`},
		{"repo with ..", sandboxConfig("profile.compose-e2e", "harness", fmt.Sprintf("{ repo = %q }", composeRepo+"/../x"), "{}"), `contains "\.\."`},
		{"compose_file with ..", sandboxConfig("profile.compose-e2e", "harness", fmt.Sprintf("{ repo = %q, compose_file = \"../docker-compose.yml\" }", composeRepo), "{}"), `contains "\.\."`},
		{"unknown input", sandboxConfig("profile.workspace", "local", "{ rpeo = \"/tmp\" }", "{}"), `unknown input "rpeo"`},
		{"bad env name", sandboxConfig("profile.workspace", "local", "{}", `{ "1BAD" = "x" }`), `Invalid Sandbox Env`},
	}
	steps := make([]resource.TestStep, 0, len(cases)+1)
	for _, c := range cases {
		steps = append(steps, resource.TestStep{
			Config:      h.providerConfig(t) + c.config,
			PlanOnly:    true,
			ExpectError: wrapped(c.want),
		})
	}
	steps = append(steps, resource.TestStep{
		Config: `
provider "sandboxer" {
  host {
    name             = "keyless"
    address          = "127.0.0.1:22"
    user             = "root"
    private_key_file = "/nonexistent/id_ed25519"
  }
}
` + sandboxConfig("profile.workspace", "keyless", "{}", "{}"),
		PlanOnly:    true,
		ExpectError: wrapped(`"keyless" cannot be used[\s\S]*host\[0\]\.private_key_file[\s\S]*unable to read private_key_file`),
	})
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             h.checkNothingLeft(t),
		Steps:                    steps,
	})
}

// Failures at apply time name the host, carry the cause and leave nothing.
func TestAccSandbox_failuresLeaveNothing(t *testing.T) {
	testAccPreCheck(t)
	testharness.RequireDocker(t)
	h := newAccHost(t)
	noImage := testharness.ComposeRepo(t, "sandboxer-no-such-image:never", "app")
	good := testharness.ComposeRepo(t, testharness.Image(t), "app")
	repo := func(dir string) string { return fmt.Sprintf("{ repo = %q }", dir) }
	cases := []struct {
		name, config, want string
	}{
		{"image that does not exist", h.providerConfig(t) + sandboxConfig("profile.compose-e2e", "harness", repo(noImage), "{}"),
			`Unable to Create Sandbox[\s\S]*host "harness"[\s\S]*compose up failed[\s\S]*stderr`},
		{"unreachable host", h.badHostsConfig(t) + sandboxConfig("profile.compose-e2e", "unreachable", repo(good), "{}"),
			`Unable to Create Sandbox[\s\S]*unable to connect to 127.0.0.1:1`},
		{"host key mismatch", h.badHostsConfig(t) + sandboxConfig("profile.compose-e2e", "reinstalled", repo(good), "{}"),
			`Unable to Create Sandbox[\s\S]*host key mismatch`},
		{"unknown host key", h.badHostsConfig(t) + sandboxConfig("profile.compose-e2e", "stranger", repo(good), "{}"),
			`Unable to Create Sandbox[\s\S]*unknown host key`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resource.Test(t, resource.TestCase{
				PreCheck:                 func() { testAccPreCheck(t) },
				ProtoV6ProviderFactories: testAccProviders,
				CheckDestroy:             h.checkNothingLeft(t),
				Steps:                    []resource.TestStep{{Config: c.config, ExpectError: wrapped(c.want)}},
			})
			if left := h.leftovers(t); len(left) > 0 {
				t.Fatalf("the failed create left: %s", strings.Join(left, ", "))
			}
		})
	}
}
