package provider

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
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
}

// accHost is a host the acceptance tests place sandboxes on, with its own
// root directory so tests can ask the host what remains.
type accHost struct {
	rootDir  string // of host "harness"
	rootDir2 string // of host "harness2", the second sshd
	localDir string // of host "local"
	// before are the compose networks and volumes that existed when the
	// test began: a network or volume left without any container is
	// found only by being new.
	before map[string]bool
}

func newAccHost(t *testing.T) accHost {
	t.Helper()
	return accHost{rootDir: t.TempDir(), rootDir2: t.TempDir(), localDir: t.TempDir(), before: composeObjectsNow(t)}
}

// composeObjectsNow are the compose networks and volumes there are now
// (accHost.before).
func composeObjectsNow(t *testing.T) map[string]bool {
	t.Helper()
	before := map[string]bool{}
	if _, err := exec.LookPath("docker"); err == nil {
		for _, kind := range []string{"network", "volume"} {
			for _, id := range composeObjects(t, kind) {
				before[kind+" "+id] = true
			}
		}
	}
	return before
}

// composeObjects lists the docker networks or volumes of compose projects
// named like a sandbox's (sbx-<id>). Docker not answering is an empty list.
func composeObjects(t *testing.T, kind string) []string {
	t.Helper()
	out, err := exec.Command("docker", kind, "ls", "-q", "--filter", "label=com.docker.compose.project").Output()
	if err != nil {
		return nil
	}
	var ids []string
	for _, id := range strings.Fields(string(out)) {
		label, err := exec.Command("docker", kind, "inspect", "-f", `{{index .Labels "com.docker.compose.project"}}`, id).Output()
		if err == nil && strings.HasPrefix(strings.TrimSpace(string(label)), "sbx-") {
			ids = append(ids, id)
		}
	}
	return ids
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

// leftovers asks the host itself — the docker engine and the filesystem,
// not Terraform state — what remains under the root directory: workspaces,
// records, and containers, networks or volumes of compose projects whose
// working directory lies under it.
func (h accHost) leftovers(t *testing.T) []string {
	t.Helper()
	var left []string
	var roots []string
	for _, root := range []string{h.rootDir, h.rootDir2, h.localDir} {
		// An accHost may leave a root unset (a test with one extra root
		// directory): "" would be a prefix of every path on the host.
		if root != "" {
			roots = append(roots, root)
		}
	}
	for _, root := range roots {
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			if e.Name() != ".sandboxer" {
				left = append(left, "workspace "+e.Name())
			}
		}
		for _, pattern := range []string{"sandboxes/*", "store/snapshots/*", "store/objects/*/*"} {
			found, _ := filepath.Glob(filepath.Join(root, ".sandboxer", pattern))
			for _, f := range found {
				left = append(left, strings.SplitN(pattern, "/", 2)[0]+" "+filepath.Base(f))
			}
		}
	}
	out, err := exec.Command("docker", "ps", "-a", "--format", `{{.Names}} {{.Label "com.docker.compose.project.working_dir"}}`).Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	projects := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		name, dir, _ := strings.Cut(line, " ")
		if dir != "" && slices.ContainsFunc(roots, func(root string) bool { return strings.HasPrefix(dir, root+"/") }) {
			left = append(left, "container "+name)
			projects[filepath.Base(dir)] = true
		}
	}
	// A network or volume of a sandbox's project: one of a project with a
	// container under our roots, or one that is new since the test began
	// (with no container left, nothing else ties it to this test; tests
	// run one at a time).
	for _, kind := range []string{"network", "volume"} {
		for _, id := range composeObjects(t, kind) {
			label, _ := exec.Command("docker", kind, "inspect", "-f", `{{index .Labels "com.docker.compose.project"}}`, id).Output()
			if projects[strings.TrimPrefix(strings.TrimSpace(string(label)), "sbx-")] || !h.before[kind+" "+id] {
				left = append(left, kind+" "+id)
			}
		}
	}
	return left
}

// checkNothingLeft is a CheckDestroy that asks the host.
func (h accHost) checkNothingLeft(t *testing.T) func(*terraform.State) error {
	return func(*terraform.State) error {
		if left := h.leftovers(t); len(left) > 0 {
			return fmt.Errorf("destroy left on the host: %s", strings.Join(left, ", "))
		}
		return nil
	}
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

// leftovers finds a sandbox network left without any container: the
// check every destroy test relies on cannot miss one.
func TestLeftoversFindsAStrayNetwork(t *testing.T) {
	testharness.RequireDocker(t)
	h := newAccHost(t)
	name := "sbx-stray" + backends.NewID()
	if out, err := exec.Command("docker", "network", "create", "--label", "com.docker.compose.project="+name, name).CombinedOutput(); err != nil {
		t.Fatalf("docker network create: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "network", "rm", name).Run() })
	left := strings.Join(h.leftovers(t), ",")
	if !strings.Contains(left, "network ") {
		t.Fatalf("a stray sandbox network was not found: %q", left)
	}
}

// must fails the test on err: for setup and fixture steps whose failure
// would make the test check something else than it says.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
