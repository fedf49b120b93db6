package provider

import (
	"fmt"
	"os"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"

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
	config := fmt.Sprintf(`
provider "sandboxer" {
  host {
    name             = "flaky"
    address          = %q
    user             = %q
    private_key_file = %q
    host_key         = %q
    root_dir         = %q
  }
}

resource "sandboxer_sandbox" "ws" {
  profile = "profile.workspace"
  host    = "flaky"
  inputs  = { repo = %q }
}
`, sshd.Addr, testharness.Env(t, "SANDBOXER_TEST_SSH_USER"), testharness.Env(t, "SANDBOXER_TEST_SSH_KEY"),
		sshd.HostKey(), h.rootDir, repo)
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
