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
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// importID builds HOST/ID from state.
func importID(addr string) resource.ImportStateIdFunc {
	return func(s *terraform.State) (string, error) {
		rs, ok := s.RootModule().Resources[addr]
		if !ok {
			return "", fmt.Errorf("%s not in state", addr)
		}
		return rs.Primary.Attributes["host"] + "/" + rs.Primary.ID, nil
	}
}

// stateAttr reads one attribute of a resource from state.
func stateAttr(s *terraform.State, addr, name string) string {
	return s.RootModule().Resources[addr].Primary.Attributes[name]
}

func TestAccSandbox_workspaceOnLocal(t *testing.T) {
	testAccPreCheck(t)
	h := newAccHost(t)
	repo := t.TempDir()
	if err := os.WriteFile(filepath.Join(repo, "hello.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	config := func(label string) string {
		return h.providerConfig(t) + fmt.Sprintf(`
resource "sandboxer_sandbox" "ws" {
  profile = "profile.workspace"
  inputs  = { repo = %q }
  env     = { API_TOKEN = "s3cret" }
  labels  = { team = %q }
}
`, repo, label)
	}
	var workspace string
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             h.checkNothingLeft(t),
		Steps: []resource.TestStep{
			{
				Config: config("$(touch /tmp/sandboxer-label-pwned)"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("sandboxer_sandbox.ws", tfjsonpath.New("host"), knownvalue.StringExact("local")),
					statecheck.ExpectKnownValue("sandboxer_sandbox.ws", tfjsonpath.New("extension"), knownvalue.StringExact("ext.vm-packer")),
					statecheck.ExpectKnownValue("sandboxer_sandbox.ws", tfjsonpath.New("status"), knownvalue.StringExact("ready")),
					statecheck.ExpectKnownValue("sandboxer_sandbox.ws", tfjsonpath.New("source_hash"), knownvalue.StringRegexp(regexp.MustCompile(`^sha256:[0-9a-f]{64}$`))),
				},
				Check: func(s *terraform.State) error {
					workspace = stateAttr(s, "sandboxer_sandbox.ws", "workspace_dir")
					if got, err := os.ReadFile(filepath.Join(workspace, "hello.txt")); err != nil || string(got) != "hello\n" {
						return fmt.Errorf("repo not copied into %s: %q %v", workspace, got, err)
					}
					if _, err := os.Stat("/tmp/sandboxer-label-pwned"); err == nil {
						return fmt.Errorf("a label was executed by a shell")
					}
					return nil
				},
			},
			{
				// Labels change in place.
				Config: config("platform"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("sandboxer_sandbox.ws", plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("sandboxer_sandbox.ws", tfjsonpath.New("labels").AtMapKey("team"), knownvalue.StringExact("platform")),
				},
			},
			{
				ResourceName:            "sandboxer_sandbox.ws",
				ImportState:             true,
				ImportStateIdFunc:       importID("sandboxer_sandbox.ws"),
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"env", "timeouts", "ttl", "timings"},
			},
			{
				// Editing a file in the repo directory shows in the plan.
				PreConfig: func() {
					if err := os.WriteFile(filepath.Join(repo, "hello.txt"), []byte("edited\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				},
				Config: config("platform"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("sandboxer_sandbox.ws", plancheck.ResourceActionDestroyBeforeCreate),
				}},
			},
			{
				// Removed out of band: the next plan re-creates it.
				PreConfig: func() {
					out, err := exec.Command("sh", "-c", "rm -rf "+h.localDir+"/*").CombinedOutput()
					if err != nil {
						t.Fatalf("%v %s", err, out)
					}
					records, _ := filepath.Glob(filepath.Join(h.localDir, ".sandboxer", "sandboxes", "*"))
					for _, r := range records {
						must(t, os.Remove(r))
					}
				},
				Config: config("platform"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("sandboxer_sandbox.ws", plancheck.ResourceActionCreate),
				}},
			},
		},
	})
}

func TestAccSandbox_composeOverSSH(t *testing.T) {
	testAccPreCheck(t)
	testharness.RequireDocker(t)
	h := newAccHost(t)
	// Declared out of name order: services are listed by name whatever
	// order compose (v1 or v2) reports them in.
	repo := testharness.ComposeRepo(t, testharness.Image(t), "worker", "web")
	const secret = "s3cr3t-7f2b9c; rm -rf /" //nolint:gosec // G101: a made-up value the test looks for in state
	config := h.providerConfig(t) + fmt.Sprintf(`
resource "sandboxer_sandbox" "stack" {
  profile = "profile.compose-e2e"
  host    = "harness"
  inputs  = { repo = %q }
  env     = { GREETING = "hi" }
  env_wo  = { API_TOKEN = %q }
  ttl     = "120m"
}
`, repo, secret)
	// The CLI's working files (state, plans) live here: the secret must be in none.
	workDir := t.TempDir()
	t.Setenv("TF_ACC_TEMP_DIR", workDir)
	servicesAre := func(state knownvalue.Check) knownvalue.Check {
		return knownvalue.ListExact([]knownvalue.Check{
			knownvalue.ObjectExact(map[string]knownvalue.Check{"name": knownvalue.StringExact("web"), "state": state, "ports": knownvalue.ListSizeExact(0)}),
			knownvalue.ObjectExact(map[string]knownvalue.Check{"name": knownvalue.StringExact("worker"), "state": state, "ports": knownvalue.ListSizeExact(0)}),
		})
	}
	var project, ws string
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             h.checkNothingLeft(t),
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					// The compose file is read at plan time: names known, states not yet.
					plancheck.ExpectKnownValue("sandboxer_sandbox.stack", tfjsonpath.New("services").AtSliceIndex(0).AtMapKey("name"), knownvalue.StringExact("web")),
					plancheck.ExpectKnownValue("sandboxer_sandbox.stack", tfjsonpath.New("services").AtSliceIndex(1).AtMapKey("name"), knownvalue.StringExact("worker")),
					plancheck.ExpectUnknownValue("sandboxer_sandbox.stack", tfjsonpath.New("services").AtSliceIndex(0).AtMapKey("state")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("sandboxer_sandbox.stack", tfjsonpath.New("status"), knownvalue.StringExact("ready")),
					statecheck.ExpectKnownValue("sandboxer_sandbox.stack", tfjsonpath.New("extension"), knownvalue.StringExact("ext.compose-ssh")),
					statecheck.ExpectKnownValue("sandboxer_sandbox.stack", tfjsonpath.New("services"), servicesAre(knownvalue.StringExact("running"))),
					statecheck.ExpectKnownValue("sandboxer_sandbox.stack", tfjsonpath.New("env_wo"), knownvalue.Null()),
					secretAbsentFromShowJSON{secret},
				},
				Check: func(s *terraform.State) error {
					project = stateAttr(s, "sandboxer_sandbox.stack", "compose_project")
					ws = stateAttr(s, "sandboxer_sandbox.stack", "workspace_dir")
					out, err := exec.Command("docker", "ps", "-q", "--filter", "label=com.docker.compose.project="+project).Output()
					if err != nil || len(regexp.MustCompile(`\S+`).FindAll(out, -1)) != 2 {
						return fmt.Errorf("docker shows %q for project %s (%v)", out, project, err)
					}
					// The workspace .env has both; state, plans and the host record hold neither the value nor a hash of it.
					if err := fileIs(ws, ".env", "API_TOKEN="+secret+"\nGREETING=hi\n"); err != nil {
						return err
					}
					return secretNowhere(secret, workDir, filepath.Join(h.rootDir, ".sandboxer"))
				},
			},
			{
				// Import through an import block: the plan must be a no-op
				// (ttl comes back as written, services in the same order).
				ResourceName:      "sandboxer_sandbox.stack",
				ImportState:       true,
				ImportStateKind:   resource.ImportBlockWithID,
				ImportStateIdFunc: importID("sandboxer_sandbox.stack"),
				Config:            strings.Replace(config, `env     = { GREETING = "hi" }`, "", 1),
				ImportPlanChecks: resource.ImportPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
					plancheck.ExpectKnownValue("sandboxer_sandbox.stack", tfjsonpath.New("ttl"), knownvalue.StringExact("120m")),
				}},
			},
			{
				// And the classic `terraform import`: everything a user sees matches.
				ResourceName:            "sandboxer_sandbox.stack",
				ImportState:             true,
				ImportStateIdFunc:       importID("sandboxer_sandbox.stack"),
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"env", "timings"}, // never on the host, by design
			},
			{
				// Stopped out of band and a container removed: drift a
				// start cannot mend, so the plan replaces it (stopped with
				// every container there is started in place:
				// TestAccSandbox_composeDesiredState).
				PreConfig: func() {
					out, err := exec.Command("sh", "-c", "docker stop -t 1 $(docker ps -q --filter label=com.docker.compose.project="+project+") && "+
						"docker rm $(docker ps -aq --filter label=com.docker.compose.project="+project+" --filter label=com.docker.compose.service=worker)").CombinedOutput()
					if err != nil {
						t.Fatalf("docker stop: %v %s", err, out)
					}
				},
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("sandboxer_sandbox.stack", plancheck.ResourceActionDestroyBeforeCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("sandboxer_sandbox.stack", tfjsonpath.New("status"), knownvalue.StringExact("ready")),
				},
			},
		},
	})
}
