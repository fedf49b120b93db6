package provider

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// harnessHostWith is a provider block whose one host, "harness", is the
// harness sshd with root as its root directory and extra in its block.
func harnessHostWith(t *testing.T, root, extra string) string {
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
%s
  }
}
`, testharness.Env(t, "SANDBOXER_TEST_SSH_ADDR"), testharness.Env(t, "SANDBOXER_TEST_SSH_USER"),
		testharness.Env(t, "SANDBOXER_TEST_SSH_KEY"), testharness.Env(t, "SANDBOXER_TEST_KNOWN_HOSTS"), root, extra)
}

// A baseline host refuses a privileged stack at plan, naming every
// finding, and the host is unchanged. A repo that passed the plan and was
// changed before the apply to add `privileged: true` fails the apply
// before anything is made on the host.
func TestAccSandbox_composePolicyPlanAndApply(t *testing.T) {
	testAccPreCheck(t)
	testharness.RequireDocker(t)
	tf := newDevCLI(t)
	h := accHostAt(t, t.TempDir(), "", "")
	repo := t.TempDir()
	clean := fmt.Sprintf("services:\n  app:\n    image: %s\n    command: [\"sleep\", \"600\"]\n", testharness.Image(t))
	write := func(compose string) {
		must(t, os.WriteFile(filepath.Join(repo, "compose.yaml"), []byte(compose), 0o644))
	}
	dir := tf.dir(devCLIHeader + harnessHostWith(t, h.rootDir, `    policy = "baseline"`) + fmt.Sprintf(`
resource "sandboxer_sandbox" "pr" {
  profile = "profile.compose-e2e"
  host    = "harness"
  inputs  = { repo = %q }
}
`, repo))
	unchanged := func(when string) {
		t.Helper()
		if left := h.leftovers(t); len(left) > 0 {
			t.Fatalf("%s left on the host: %s", when, strings.Join(left, ", "))
		}
	}

	write(clean + "    privileged: true\n    pid: host\n    volumes: [\"/:/host\"]\n")
	out, err := tf.try(dir, "plan")
	if err == nil {
		t.Fatalf("a baseline host planned a privileged stack:\n%s", out)
	}
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{`service "app": privileged: true`, `service "app": pid: host`, `service "app": bind mount / is outside the repo`, `refused by policy "baseline"`} {
		if !strings.Contains(flat, want) {
			t.Errorf("the plan does not say %q:\n%s", want, out)
		}
	}
	unchanged("a refused plan")

	write(clean)
	tf.run(dir, "plan", "-out=tfplan")
	write(clean + "    privileged: true\n")
	out, err = tf.try(dir, "apply", "tfplan")
	if err == nil {
		t.Fatalf("the apply ran a stack made privileged after its plan:\n%s", out)
	}
	if flat := strings.Join(strings.Fields(out), " "); !strings.Contains(flat, `privileged: true gives it the host's devices and kernel (refused by policy "baseline")`) {
		t.Errorf("the apply does not say why:\n%s", out)
	}
	unchanged("a refused apply")
	if ids := recordIDs(h.rootDir); len(ids) > 0 {
		t.Fatalf("a refused apply left records %v", ids)
	}
}

// Limits protect neighbours: under the host's default_limits, a service
// that allocates without end is killed by the kernel (OOM) and its
// sandbox shows it exited; one that forks without end stays within its
// pids limit; the neighbour sandbox stays ready and answers through its
// endpoint, and the engine answers.
func TestAccSandbox_composeLimitsProtectNeighbours(t *testing.T) {
	testAccPreCheck(t)
	testharness.RequireDocker(t)
	h := accHostAt(t, t.TempDir(), "", "")
	image := testharness.Image(t)
	// The hog and the bomb wait for /tmp/go, so the sandbox is ready first.
	// The bomb forks sleepers until a fork fails (ash then exits), and its
	// first process stays as a sleep: the sleepers stay.
	hog := t.TempDir()
	must(t, os.WriteFile(filepath.Join(hog, "compose.yaml"), []byte(fmt.Sprintf(`services:
  hog:
    image: %[1]s
    command: ["sh", "-c", "while [ ! -e /tmp/go ]; do sleep 0.2; done; a=$$(head -c 400000000 /dev/zero | tr '\\0' x); sleep 600"]
  bomb:
    image: %[1]s
    command: ["sh", "-c", "while [ ! -e /tmp/go ]; do sleep 0.2; done; sh -c 'while true; do sleep 600 & done' 2>/dev/null; exec sleep 600"]
`, image)), 0o644))
	neighbour := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(neighbour, "www"), 0o755))
	must(t, os.WriteFile(filepath.Join(neighbour, "www", "index.html"), []byte("still here\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(neighbour, "compose.yaml"), []byte(fmt.Sprintf(`services:
  web:
    image: %s
    command: ["httpd", "-f", "-p", "80", "-h", "/www"]
    volumes: ["./www:/www:ro"]
    ports: ["80"]
`, image)), 0o644))
	config := harnessHostWith(t, h.rootDir, `    default_limits = { memory = "64m", cpus = 0.5, pids = 64 }`) + fmt.Sprintf(`
resource "sandboxer_sandbox" "hog" {
  profile = "profile.compose-e2e"
  host    = "harness"
  inputs  = { repo = %q }
}
resource "sandboxer_sandbox" "neighbour" {
  profile = "profile.compose-e2e"
  host    = "harness"
  inputs  = { repo = %q }
}
`, hog, neighbour)
	inspect := func(project, service, format string) string {
		return strings.TrimSpace(hostSays(t, fmt.Sprintf("docker inspect -f '%s' $(docker ps -aq --filter label=com.docker.compose.project=%s --filter label=com.docker.compose.service=%s)", format, project, service)))
	}
	var hogProject string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             h.checkNothingLeft(t),
		Steps: []resource.TestStep{{
			Config: config,
			Check: func(s *terraform.State) error {
				hogProject = s.RootModule().Resources["sandboxer_sandbox.hog"].Primary.Attributes["compose_project"]
				for _, svc := range []string{"hog", "bomb"} {
					if got := inspect(hogProject, svc, "{{.HostConfig.Memory}} {{.HostConfig.NanoCpus}} {{.HostConfig.PidsLimit}}"); got != "67108864 500000000 64" {
						return fmt.Errorf("service %s runs with memory, nano-CPUs, pids %q, want the host's default_limits", svc, got)
					}
				}
				return nil
			},
		}, {
			PreConfig: func() {
				for _, svc := range []string{"hog", "bomb"} {
					hostSays(t, fmt.Sprintf("docker exec $(docker ps -q --filter label=com.docker.compose.project=%s --filter label=com.docker.compose.service=%s) touch /tmp/go", hogProject, svc))
				}
				waitOrFail(t, 60*time.Second, "the hog to be killed", func() bool {
					return inspect(hogProject, "hog", "{{.State.Status}}") == "exited"
				})
				if got := inspect(hogProject, "hog", "{{.State.OOMKilled}} {{.State.ExitCode}}"); got != "true 137" {
					t.Errorf("the hog ended with OOMKilled, exit code %q, want the kernel's OOM kill", got)
				}
				bombProcesses := func() int {
					n, _ := strconv.Atoi(strings.TrimSpace(hostSays(t, fmt.Sprintf("docker top $(docker ps -q --filter label=com.docker.compose.project=%s --filter label=com.docker.compose.service=bomb) | tail -n +2 | wc -l", hogProject))))
					return n
				}
				waitOrFail(t, 30*time.Second, "the fork bomb to fork", func() bool { return bombProcesses() >= 32 })
				if n := bombProcesses(); n > 64 {
					t.Errorf("the fork bomb runs %d processes, above its pids limit of 64", n)
				}
				hostSays(t, "docker version --format '{{.Server.Version}}'")
			},
			RefreshState:       true,
			ExpectNonEmptyPlan: true, // the hog's sandbox is degraded: a later plan replaces it
			Check: resource.ComposeTestCheckFunc(
				resource.TestCheckResourceAttr("sandboxer_sandbox.hog", "services.1.name", "hog"),
				resource.TestCheckResourceAttr("sandboxer_sandbox.hog", "services.1.state", "exited"),
				resource.TestCheckResourceAttr("sandboxer_sandbox.hog", "services.0.state", "running"),
				resource.TestCheckResourceAttr("sandboxer_sandbox.hog", "status", "degraded"),
				resource.TestCheckResourceAttr("sandboxer_sandbox.neighbour", "status", "ready"),
				func(s *terraform.State) error {
					url := "http://" + s.RootModule().Resources["sandboxer_sandbox.neighbour"].Primary.Attributes["endpoints.web:80"] + "/"
					resp, err := http.Get(url) //nolint:gosec,noctx // the test's own sandbox on the harness host
					if err != nil {
						return fmt.Errorf("the neighbour does not answer at %s: %w", url, err)
					}
					body, _ := io.ReadAll(resp.Body)
					_ = resp.Body.Close() // read to its end
					if strings.TrimSpace(string(body)) != "still here" {
						return fmt.Errorf("the neighbour answered %q", body)
					}
					return nil
				},
			),
		}},
	})
}

// A sandbox with no compose file (a workspace) on a host with a policy
// keeps the level the plan gave it: created, refreshed and imported, the
// plan stays empty.
func TestAccSandbox_workspaceOnAPolicyHost(t *testing.T) {
	testAccPreCheck(t)
	h := accHostAt(t, t.TempDir(), "", "")
	config := harnessHostWith(t, h.rootDir, `    policy = "baseline"`) + `
resource "sandboxer_sandbox" "ws" {
  profile = "profile.workspace"
  host    = "harness"
}
`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             h.checkNothingLeft(t),
		Steps: []resource.TestStep{{
			Config: config,
			Check:  resource.TestCheckResourceAttr("sandboxer_sandbox.ws", "policy", "baseline"),
		}, {
			Config:       config,
			ResourceName: "sandboxer_sandbox.ws",
			ImportState:  true,
			ImportStateIdFunc: func(s *terraform.State) (string, error) {
				return "harness/" + s.RootModule().Resources["sandboxer_sandbox.ws"].Primary.ID, nil
			},
			ImportStateVerify:       true,
			ImportStateVerifyIgnore: []string{"timeouts", "timings", "env", "inputs", "ttl", "host_labels", "labels"},
		}},
	})
}
