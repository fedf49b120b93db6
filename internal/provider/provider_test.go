package provider

import (
	"fmt"
	"os"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// testAccProviders serves the provider in-process to the terraform (or tofu)
// binary named by TF_ACC_TERRAFORM_PATH.
var testAccProviders = map[string]func() (tfprotov6.ProviderServer, error){
	"sandboxer": providerserver.NewProtocol6WithError(New("test")()),
}

// testAccPreCheck makes sure a CLI is there; resource.Test itself skips
// unless TF_ACC=1.
func testAccPreCheck(t *testing.T) {
	t.Helper()
	// As resource.Test does: the tests that drive the CLI themselves
	// (devCLI) would otherwise run in every plain `go test` too.
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1")
	}
	testharness.Env(t, "TF_ACC_TERRAFORM_PATH")
	testharness.Share(t)
}

// accHost is a host the acceptance tests place sandboxes on, with its own
// root directories so tests can ask the host what remains (leftovers).
type accHost struct {
	rootDir  string // of host "harness"
	rootDir2 string // of host "harness2", the second sshd
	localDir string // of host "local"
	// made are the sandboxes made under the root directories since the
	// accHost was: what of the engine's is this test's.
	made *madeUnder
}

func newAccHost(t *testing.T) accHost {
	t.Helper()
	return accHostAt(t, t.TempDir(), t.TempDir(), t.TempDir())
}

// accHostAt is an accHost over existing root directories ("" for a host
// the test does not use), watched from now on.
func accHostAt(t *testing.T, root, root2, local string) accHost {
	t.Helper()
	testharness.Share(t)
	return accHost{rootDir: root, rootDir2: root2, localDir: local, made: watchRoots(t, root, root2, local)}
}

// providerConfig is a provider block with the harness sshd as host
// "harness" and the built-in local host pointed at the same root directory.
func (h accHost) providerConfig(t *testing.T) string {
	t.Helper()
	return fmt.Sprintf(`
provider "sandboxer" {
  host {
    name             = "harness"
    address          = %q
    user             = %q
    private_key_file = %q
    known_hosts_file = %q
    root_dir         = %q
  }
  host {
    name             = "harness2"
    address          = %q
    user             = %q
    private_key_file = %q
    known_hosts_file = %q
    root_dir         = %q
  }
  host {
    name     = "local"
    local    = true
    root_dir = %q
  }
}
`, testharness.Env(t, "SANDBOXER_TEST_SSH_ADDR"), testharness.Env(t, "SANDBOXER_TEST_SSH_USER"),
		testharness.Env(t, "SANDBOXER_TEST_SSH_KEY"), testharness.Env(t, "SANDBOXER_TEST_KNOWN_HOSTS"),
		h.rootDir,
		testharness.Env(t, "SANDBOXER_TEST_SSH_ADDR2"), testharness.Env(t, "SANDBOXER_TEST_SSH_USER"),
		testharness.Env(t, "SANDBOXER_TEST_SSH_KEY"), testharness.Env(t, "SANDBOXER_TEST_KNOWN_HOSTS"),
		h.rootDir2, h.localDir)
}

// privateSSHDConfig is a provider block whose one host, name, is an sshd
// of the test's own (testharness.StartPrivateSSHD), its key pinned.
func privateSSHDConfig(t *testing.T, sshd *testharness.PrivateSSHD, name, rootDir string) string {
	t.Helper()
	return fmt.Sprintf(`
provider "sandboxer" {
  host {
    name             = %q
    address          = %q
    user             = %q
    private_key_file = %q
    host_key         = %q
    root_dir         = %q
  }
}
`, name, sshd.Addr, testharness.Env(t, "SANDBOXER_TEST_SSH_USER"), testharness.Env(t, "SANDBOXER_TEST_SSH_KEY"), sshd.HostKey(), rootDir)
}

// must fails the test on err: for setup and fixture steps whose failure
// would make the test check something else than it says.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
