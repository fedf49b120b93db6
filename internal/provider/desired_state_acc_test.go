package provider

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// pgRepo is a compose repo of one PostgreSQL service (the harness's image)
// that publishes its port and is ready once it accepts connections.
func pgRepo(t *testing.T) string {
	repo := t.TempDir()
	must(t, os.WriteFile(filepath.Join(repo, "compose.yaml"), []byte(`services:
  db:
    image: `+testharness.PGImage(t)+`
    ports: ["5432"]
    healthcheck:
      test: ["CMD", "pg_isready", "-h", "127.0.0.1", "-U", "postgres"]
      interval: 1s
      retries: 60
`), 0o644))
	return repo
}

// projectStates are the states of a compose project's containers, sorted.
func projectStates(t *testing.T, project string) string {
	t.Helper()
	return hostSays(t, "docker ps -a --filter label=com.docker.compose.project="+project+" --format '{{.State}}' | sort | tr '\\n' ' '")
}

// A database stopped overnight and started again, in place: its row stays,
// its containers are stopped while it is, and a stack stopped by hand
// plans an in-place start, not a replacement.
func TestAccSandbox_composeDesiredState(t *testing.T) {
	testAccPreCheck(t)
	testharness.RequireDocker(t)
	h := newAccHost(t)
	repo := pgRepo(t)
	migrate := `
resource "sandboxer_command" "migrate" {
  sandbox_id = sandboxer_sandbox.db.id
  service    = "db"
  command    = ["psql", "-v", "ON_ERROR_STOP=1", "-U", "postgres", "-c", "CREATE TABLE notes (body text); INSERT INTO notes VALUES ('kept overnight')"]
}
`
	read := `
resource "sandboxer_command" "read" {
  sandbox_id = sandboxer_sandbox.db.id
  service    = "db"
  command    = ["sh", "-c", "psql -U postgres -Atc \"$QUERY\""]
  env        = { QUERY = "SELECT body FROM notes" }
  depends_on = [sandboxer_command.migrate]
}
`
	config := func(desired string, commands ...string) string {
		return h.providerConfig(t) + fmt.Sprintf(`
resource "sandboxer_sandbox" "db" {
  profile       = "profile.compose-e2e"
  host          = "harness"
  inputs        = { repo = %q }
  desired_state = %q
}
`, repo, desired) + strings.Join(commands, "")
	}
	var id, project string
	psql := func(sql string) (string, error) {
		container := hostSays(t, "docker ps -q --filter label=com.docker.compose.project="+project)
		out, err := exec.Command("docker", "exec", container, "psql", "-U", "postgres", "-Atc", sql).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	sandbox := "sandboxer_sandbox.db"
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             h.checkNothingLeft(t),
		Steps: []resource.TestStep{
			{
				Config: config("running", migrate),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(sandbox, tfjsonpath.New("timings"), knownvalue.MapExact(map[string]knownvalue.Check{
						"copy": knownvalue.NotNull(), "render": knownvalue.NotNull(), "up": knownvalue.NotNull(),
						"ready": knownvalue.NotNull(), "total": knownvalue.NotNull(),
					})),
				},
				Check: func(s *terraform.State) error {
					id, project = stateAttr(s, sandbox, "id"), stateAttr(s, sandbox, "compose_project")
					if got, err := psql("SELECT body FROM notes"); err != nil || got != "kept overnight" {
						return fmt.Errorf("after the migration the database holds %q (%v)", got, err)
					}
					return nil
				},
			},
			{
				Config: config("stopped", migrate),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(sandbox, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(sandbox, tfjsonpath.New("status"), knownvalue.StringExact("stopped")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(sandbox, tfjsonpath.New("status"), knownvalue.StringExact("stopped")),
					statecheck.ExpectKnownValue(sandbox, tfjsonpath.New("endpoints"), knownvalue.MapExact(map[string]knownvalue.Check{})),
					statecheck.ExpectKnownValue(sandbox, tfjsonpath.New("services").AtSliceIndex(0).AtMapKey("state"), knownvalue.StringExact("exited")),
				},
				Check: func(s *terraform.State) error {
					if got := stateAttr(s, sandbox, "id"); got != id {
						return fmt.Errorf("the sandbox was replaced: %s, then %s", id, got)
					}
					if got := projectStates(t, project); got != "exited" {
						return fmt.Errorf("containers of %s after the stop: %q, want every one exited", project, got)
					}
					return nil
				},
			},
			{
				// Started, and read in the same apply.
				Config: config("running", migrate, read),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(sandbox, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(sandbox, tfjsonpath.New("status"), knownvalue.StringExact("ready")),
					statecheck.ExpectKnownValue(sandbox, tfjsonpath.New("endpoints").AtMapKey("db:5432"), knownvalue.NotNull()),
					statecheck.ExpectKnownValue("sandboxer_command.read", tfjsonpath.New("stdout"), knownvalue.StringExact("kept overnight\n")),
					statecheck.ExpectKnownValue("sandboxer_command.read", tfjsonpath.New("exit_code"), knownvalue.Int64Exact(0)),
					statecheck.ExpectKnownValue(sandbox, tfjsonpath.New("timings"), knownvalue.MapExact(map[string]knownvalue.Check{
						"start": knownvalue.NotNull(), "ready": knownvalue.NotNull(), "total": knownvalue.NotNull(),
					})),
				},
			},
			{
				// Stopped by hand while desired running: started in place.
				PreConfig: func() {
					hostSays(t, "docker stop $(docker ps -q --filter label=com.docker.compose.project="+project+")")
				},
				Config: config("running", migrate, read),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(sandbox, plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction("sandboxer_command.read", plancheck.ResourceActionNoop),
					plancheck.ExpectKnownValue(sandbox, tfjsonpath.New("status"), knownvalue.StringExact("ready")),
				}},
				Check: func(s *terraform.State) error {
					if got := stateAttr(s, sandbox, "id"); got != id {
						return fmt.Errorf("the sandbox was replaced: %s, then %s", id, got)
					}
					if got := projectStates(t, project); got != "running" {
						return fmt.Errorf("containers of %s after the start: %q", project, got)
					}
					return nil
				},
			},
			{
				// Started by hand while desired stopped: stopped in place.
				Config: config("stopped", migrate, read),
			},
			{
				PreConfig: func() {
					hostSays(t, "docker start $(docker ps -aq --filter label=com.docker.compose.project="+project+")")
				},
				Config: config("stopped", migrate, read),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(sandbox, plancheck.ResourceActionUpdate),
				}},
				Check: func(s *terraform.State) error {
					if got := projectStates(t, project); got != "exited" {
						return fmt.Errorf("containers of %s after the stop: %q", project, got)
					}
					return nil
				},
			},
			{
				// In a sandbox stopped on purpose: refused at apply.
				Config:      config("stopped", migrate, read, `resource "sandboxer_command" "late" {`+"\n"+`sandbox_id = sandboxer_sandbox.db.id`+"\n"+`service = "db"`+"\n"+`command = ["true"]`+"\n}\n"),
				ExpectError: regexp.MustCompile(`(?s)Unable to Run Command.*is stopped \(desired_state = "stopped"\)`),
			},
			{
				// An unknown service: refused at plan, nothing runs.
				Config:      config("stopped", migrate, read, `resource "sandboxer_command" "late" {`+"\n"+`sandbox_id = sandboxer_sandbox.db.id`+"\n"+`service = "web"`+"\n"+`command = ["true"]`+"\n}\n"),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)Unable to Run Command.*has no service "web"; its services: db`),
			},
			{
				// Imported while stopped: desired_state comes from the host.
				ResourceName:            sandbox,
				ImportState:             true,
				ImportStateVerify:       true,
				ImportStateIdFunc:       func(*terraform.State) (string, error) { return "harness/" + id, nil },
				ImportStateVerifyIgnore: []string{"timeouts", "timings"},
				Config:                  config("stopped", migrate, read),
			},
		},
	})
}

// on_expiry = "stop": the host's reaper stops the expired stack instead of
// destroying it, the next refresh shows it stopped (the plan starts it
// again, in place), and its workspace and record stay.
func TestAccSandbox_composeExpiryStops(t *testing.T) {
	testAccPreCheck(t)
	testharness.RequireDocker(t)
	h := newAccHost(t)
	repo := testharness.ComposeRepo(t, testharness.Image(t), "worker")
	provider := strings.Replace(h.providerConfig(t), `    root_dir         = "`+h.rootDir+`"`, `    root_dir         = "`+h.rootDir+`"
    reaper           = true`, 1)
	host := testharness.SSHHost(t)
	host.RootDir = h.rootDir
	t.Cleanup(func() {
		// The destroy leaves the reaper (a setting of the host); its
		// crontab line would outlive the root directory.
		_ = backends.UninstallReaper(context.Background(), host) // best effort: the test is over
	})
	config := func(ttl string) string {
		return provider + fmt.Sprintf(`
resource "sandboxer_sandbox" "s" {
  profile   = "profile.compose-e2e"
  host      = "harness"
  inputs    = { repo = %q }
  ttl       = %q
  on_expiry = "stop"
}
`, repo, ttl)
	}
	sandbox := "sandboxer_sandbox.s"
	var project, expires string
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             h.checkNothingLeft(t),
		Steps: []resource.TestStep{
			{
				Config: config("2s"),
				Check: func(s *terraform.State) error {
					project, expires = stateAttr(s, sandbox, "compose_project"), stateAttr(s, sandbox, "expires_at")
					return nil
				},
			},
			{
				PreConfig: func() {
					at, err := time.Parse(time.RFC3339, expires)
					must(t, err)
					time.Sleep(time.Until(at.Add(time.Second))) // the reaper acts on expiry, a time
					out := hostSays(t, "sh "+filepath.Join(h.rootDir, ".sandboxer", "bin", "reaper.sh"))
					if !strings.Contains(out, "stopped ") || strings.Contains(out, "reaped") {
						t.Errorf("the reaper said %q, want it to stop the sandbox", out)
					}
				},
				RefreshState:       true,
				ExpectNonEmptyPlan: true,
				Check: func(s *terraform.State) error {
					if got := stateAttr(s, sandbox, "status"); got != "stopped" {
						return fmt.Errorf("status after the reaper: %q, want stopped", got)
					}
					if got := projectStates(t, project); got != "exited" {
						return fmt.Errorf("containers after the reaper: %q", got)
					}
					return nil
				},
			},
			{
				// Started again in place, with a longer ttl so that no
				// reaper stops it meanwhile.
				Config: config("1h"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(sandbox, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(sandbox, tfjsonpath.New("status"), knownvalue.StringExact("ready")),
				},
			},
		},
	})
}
