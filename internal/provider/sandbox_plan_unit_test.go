package provider

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// Plan-time rules, run with resource.UnitTest: no harness, no docker, no
// SSH, nothing applied; only a terraform (or tofu) CLI, which the test
// framework finds on PATH when TF_ACC_TERRAFORM_PATH is unset.

func requireCLI(t *testing.T) {
	t.Helper()
	if os.Getenv("TF_ACC_TERRAFORM_PATH") != "" {
		return
	}
	if _, err := exec.LookPath("terraform"); err != nil {
		if os.Getenv("SANDBOXER_REQUIRE_HARNESS") != "" {
			t.Fatal("no terraform CLI on PATH and TF_ACC_TERRAFORM_PATH is not set")
		}
		t.Skip("no terraform CLI on PATH and TF_ACC_TERRAFORM_PATH is not set")
	}
}

// buildProvider is a provider block whose one host, "build", is this
// machine with root as its root directory; extra goes in the block.
func buildProvider(root, extra string) string {
	return fmt.Sprintf(`
provider "sandboxer" {
  host {
    name     = "build"
    local    = true
    root_dir = %q
  }
%s
}
`, root, extra)
}

// planConfig is a compose sandbox on a local host whose root directory is
// a fresh temporary one: a plan must leave it empty.
func planConfig(t *testing.T, root, compose, extra string) string {
	t.Helper()
	repo := t.TempDir()
	if err := os.WriteFile(filepath.Join(repo, "docker-compose.yml"), []byte(compose), 0o644); err != nil {
		t.Fatal(err)
	}
	return buildProvider(root, "") + fmt.Sprintf(`
resource "sandboxer_sandbox" "stack" {
  profile = "profile.compose-e2e"
  host    = "build"
  inputs  = { repo = %q }
%s
}
`, repo, extra)
}

func rootStaysEmpty(t *testing.T, root string) {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil || len(entries) != 0 {
		t.Fatalf("a plan wrote to the host: %v %v", entries, err)
	}
}

func TestUnitSandboxPlan_servicesByNameAtPlanTime(t *testing.T) {
	requireCLI(t)
	root := t.TempDir()
	compose := "services:\n  worker:\n    image: busybox\n  web:\n    image: busybox\n    ports: [\"8080:80\"]\n"
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{
			Config:             planConfig(t, root, compose, `  ttl = "120m"`),
			PlanOnly:           true,
			ExpectNonEmptyPlan: true,
			ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
				plancheck.ExpectKnownValue("sandboxer_sandbox.stack", tfjsonpath.New("services").AtSliceIndex(0).AtMapKey("name"), knownvalue.StringExact("web")),
				plancheck.ExpectKnownValue("sandboxer_sandbox.stack", tfjsonpath.New("services").AtSliceIndex(1).AtMapKey("name"), knownvalue.StringExact("worker")),
				plancheck.ExpectUnknownValue("sandboxer_sandbox.stack", tfjsonpath.New("services").AtSliceIndex(1).AtMapKey("state")),
				plancheck.ExpectKnownValue("sandboxer_sandbox.stack", tfjsonpath.New("ttl"), knownvalue.StringExact("120m")),
			}},
		}},
	})
	rootStaysEmpty(t, root)
}

func TestUnitSandboxPlan_composeErrors(t *testing.T) {
	requireCLI(t)
	cases := map[string]struct {
		compose, extra string
		want           *regexp.Regexp
	}{
		"every error at once": {
			compose: "services:\n  a:\n    build: ../../one\n  b:\n    build: ../../two\n",
			want:    regexp.MustCompile(`(?s)Invalid Compose File.*line 3:.*outside the repo.*Invalid Compose File.*line 5:.*outside the repo`),
		},
		"published_ports": {
			compose: "services:\n  web:\n    image: busybox\n",
			extra:   `  published_ports = "fixed"`,
			want:    regexp.MustCompile(`(?s)published_ports.*value must be one of`),
		},
		"unknown key": {
			compose: "services:\n  web:\n    imagee: busybox\n",
			want:    regexp.MustCompile(`(?s)Invalid Compose File.*imagee`),
		},
		"build outside repo": {
			compose: "services:\n  web:\n    build: ../../elsewhere\n",
			want:    regexp.MustCompile(`(?s)line 3.*outside the repo`),
		},
		"env in both": {
			compose: "services:\n  web:\n    image: busybox\n",
			extra:   `  env    = { TOKEN = "a" }` + "\n" + `  env_wo = { TOKEN = "b" }`,
			want:    regexp.MustCompile(`(?s)TOKEN is set in both env and env_wo`),
		},
		"bad env_wo name": {
			compose: "services:\n  web:\n    image: busybox\n",
			extra:   `  env_wo = { "1BAD" = "secret-value" }`,
			want:    regexp.MustCompile(`(?s)env name "1BAD" is not a valid`),
		},
		"bad ttl": {
			compose: "services:\n  web:\n    image: busybox\n",
			extra:   `  ttl = "2 hours"`,
			want:    regexp.MustCompile(`Invalid TTL`),
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProviders,
				Steps: []resource.TestStep{{
					Config:      planConfig(t, root, c.compose, c.extra),
					PlanOnly:    true,
					ExpectError: c.want,
				}},
			})
			rootStaysEmpty(t, root)
		})
	}
}

// Every kind of plan finding has its own summary, so Terraform folds none
// of them into another ("and N more similar warnings"): a docker socket
// mount is always shown. Run through the real CLI, whose output is what
// users read; nothing is applied.
func TestUnitSandboxPlan_findingsAreNotFolded(t *testing.T) {
	requireCLI(t)
	if os.Getenv("TF_ACC_TERRAFORM_PATH") == "" {
		cli, _ := exec.LookPath("terraform")
		t.Setenv("TF_ACC_TERRAFORM_PATH", cli)
	}
	root := t.TempDir()
	compose := `services:
  web:
    image: busybox
    container_name: web
    ports: ["8080:80", "8443:443"]
  api:
    image: busybox
    container_name: api
    ports: ["9090:90"]
  ci:
    image: busybox
    privileged: true
    pid: host
    network_mode: host
    volumes: ["/var/run/docker.sock:/var/run/docker.sock", "~/cache:/cache"]
networks:
  front:
    name: fixed-front
`
	tf := newDevCLI(t)
	dir := tf.dir(devCLIHeader + planConfig(t, root, compose, ""))
	out := tf.run(dir, "plan")
	for _, summary := range []string{"Container Names Scoped to the Sandbox", "Published Ports Get Free Host Ports",
		"Docker Socket Mounted Into the Sandbox", "Privileged Containers", "Host PID Namespace", "Host Networking",
		"Bind Mounts From Outside the Repo", "Network and Volume Names Scoped to the Sandbox"} {
		if n := strings.Count(out, "Warning: "+summary); n != 1 {
			t.Errorf("%q shown %d times, want once", summary, n)
		}
	}
	for _, detail := range []string{`"sbx-<id>-web"`, `"sbx-<id>-api"`, `endpoints["web:443"]`, `endpoints["api:90"]`, "~/cache"} {
		if !strings.Contains(out, detail) {
			t.Errorf("plan does not say %q", detail)
		}
	}
	if strings.Contains(out, "more similar warning") {
		t.Errorf("warnings were folded:\n%s", out)
	}
	rootStaysEmpty(t, root)
}
