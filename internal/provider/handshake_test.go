package provider

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// TestAccApplySixComposeSandboxesHandshakes runs the real CLI against the
// built provider binary (not the in-process test server) and counts the SSH
// handshakes sshd logs during one `apply` of six compose sandboxes on one
// host. The bar is two: one per provider process the CLI starts (plan walk
// and apply walk), however many resources there are.
func TestAccApplySixComposeSandboxesHandshakes(t *testing.T) {
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1")
	}
	testharness.RequireDocker(t)
	h := newAccHost(t)

	cli := newDevCLI(t)

	repo := testharness.ComposeRepo(t, testharness.Image(t), "app")
	// An sshd of its own: the count is this test's handshakes only.
	sshd := testharness.StartPrivateSSHD(t)
	config := `terraform {
  required_providers {
    sandboxer = { source = "sand-boxer/sandboxer" }
  }
}
` + privateSSHDConfig(t, sshd, "harness", h.rootDir) + fmt.Sprintf(`
resource "sandboxer_sandbox" "six" {
  count   = 6
  profile = "profile.compose-e2e"
  host    = "harness"
  inputs  = { repo = %q }
}
`, repo)
	work := cli.dir(config)
	tf := func(args ...string) {
		t.Helper()
		cli.run(work, args...)
	}
	t.Cleanup(func() {
		tf("destroy", "-auto-approve")
		if left := h.leftovers(t); len(left) > 0 {
			t.Errorf("destroy left on the host: %s", strings.Join(left, ", "))
		}
	})

	tf("apply", "-auto-approve")
	handshakes := sshd.Accepted()
	t.Logf("apply of 6 compose sandboxes: %d SSH handshakes", handshakes)
	if handshakes > 2 {
		t.Fatalf("apply of 6 compose sandboxes made %d SSH handshakes, want at most 2", handshakes)
	}
	if handshakes == 0 {
		t.Fatal("no handshake seen: the sandboxes did not go through the harness sshd")
	}
}
