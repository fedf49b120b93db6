package provider

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/events"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// hostSays runs a shell command on this machine (the harness hosts are
// loopback sshd on it) and returns its trimmed output.
func hostSays(t *testing.T, script string) string {
	t.Helper()
	out, err := exec.Command("sh", "-c", script).Output()
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	return strings.TrimSpace(string(out))
}

// hostHasCrontab: "true" when the harness host can schedule the reaper.
func hostHasCrontab(t *testing.T) string {
	return strconv.FormatBool(hostSays(t, "command -v crontab || true") != "")
}

func TestAccInventory_factsStaleAndReaper(t *testing.T) {
	testAccPreCheck(t)
	testharness.RequireDocker(t)
	h := newAccHost(t)
	repo := testharness.ComposeRepo(t, testharness.Image(t), "app")
	provider := strings.Replace(h.providerConfig(t), `    root_dir         = "`+h.rootDir+`"`, `    root_dir         = "`+h.rootDir+`"
    reaper           = true`, 1)
	reaperOff := strings.Replace(provider, "reaper           = true", "reaper           = false", 1)
	sandboxes := fmt.Sprintf(`
resource "sandboxer_sandbox" "short" {
  profile = "profile.workspace"
  host    = "harness"
  ttl     = "1s"
}
resource "sandboxer_sandbox" "stack" {
  profile = "profile.compose-e2e"
  host    = "harness"
  inputs  = { repo = %q }
}
`, repo)
	inventory := `
data "sandboxer_host_inventory" "h" {
  host = "harness" # read at plan time, before the apply replaces the stopped stack
}
`
	var shortID, project string
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             h.checkNothingLeft(t),
		Steps: []resource.TestStep{
			{
				Config: provider + sandboxes,
				Check: func(s *terraform.State) error {
					shortID = stateAttr(s, "sandboxer_sandbox.short", "id")
					project = stateAttr(s, "sandboxer_sandbox.stack", "compose_project")
					if _, err := os.Stat(filepath.Join(h.rootDir, ".sandboxer", "bin", "reaper.sh")); err != nil {
						return fmt.Errorf("reaper = true did not install the reaper: %v", err)
					}
					return nil
				},
			},
			{
				// The stack's services stopped out of band: half-dead. The
				// 1-second sandbox has expired.
				PreConfig: func() {
					time.Sleep(2 * time.Second)
					hostSays(t, "docker stop -t 1 $(docker ps -q --filter label=com.docker.compose.project="+project+")")
				},
				Config: provider + sandboxes + inventory,
				Check: func(s *terraform.State) error {
					inv := s.RootModule().Resources["data.sandboxer_host_inventory.h"].Primary.Attributes
					checks := map[string]string{
						"reachable":      "true",
						"cpu_count":      hostSays(t, "nproc"),
						"os":             strings.ToLower(hostSays(t, "uname -s")),
						"docker_version": hostSays(t, "docker version --format '{{.Server.Version}}'"),
						"disk_total_bytes": strconv.FormatInt(func() int64 {
							n, _ := strconv.ParseInt(hostSays(t, "df -Pk "+h.rootDir+" | awk 'NR==2{print $2}'"), 10, 64)
							return n * 1024
						}(), 10),
						"sandboxes.#":         "2",
						"stale_sandbox_ids.#": "2",
						"reaper_installed":    "true",
						"reaper_scheduled":    hostHasCrontab(t),
					}
					for k, want := range checks {
						if inv[k] != want {
							return fmt.Errorf("inventory %s = %q, the host says %q", k, inv[k], want)
						}
					}
					stale := inv["stale_sandbox_ids.0"] + " " + inv["stale_sandbox_ids.1"]
					if !strings.Contains(stale, shortID) || !strings.Contains(stale, strings.TrimPrefix(project, "sbx-")) {
						return fmt.Errorf("stale ids %q: want the expired %s and the half-dead stack", stale, shortID)
					}
					for i := 0; i < 2; i++ {
						if inv[fmt.Sprintf("sandboxes.%d.id", i)] == shortID && inv[fmt.Sprintf("sandboxes.%d.expired", i)] != "true" {
							return fmt.Errorf("the 1s sandbox is not listed as expired")
						}
					}
					return nil
				},
			},
			{
				// The reaper, run on demand with nobody running Terraform,
				// removes the expired sandbox and nothing else; the next plan
				// shows the drift.
				PreConfig: func() {
					out := hostSays(t, "sh "+filepath.Join(h.rootDir, ".sandboxer", "bin", "reaper.sh"))
					if out != "reaped "+shortID+" (expired "+strings.Split(out, "(expired ")[len(strings.Split(out, "(expired "))-1] {
						t.Fatalf("reaper output %q, want only %s", out, shortID)
					}
				},
				Config: provider + sandboxes,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("sandboxer_sandbox.short", plancheck.ResourceActionCreate),
					plancheck.ExpectResourceAction("sandboxer_sandbox.stack", plancheck.ResourceActionNoop),
				}},
			},
			{
				// reaper = false removes the reaper (and its crontab line)
				// when a sandbox is next created on the host.
				Config: reaperOff + sandboxes + `
resource "sandboxer_sandbox" "later" {
  profile = "profile.workspace"
  host    = "harness"
}
`,
				Check: func(s *terraform.State) error {
					if _, err := os.Stat(filepath.Join(h.rootDir, ".sandboxer", "bin", "reaper.sh")); !os.IsNotExist(err) {
						return fmt.Errorf("reaper = false left the reaper installed (%v)", err)
					}
					if tab, _ := exec.Command("crontab", "-l").Output(); strings.Contains(string(tab), "# sandboxer-reaper "+h.rootDir) {
						return fmt.Errorf("reaper = false left its crontab line:\n%s", tab)
					}
					return nil
				},
			},
		},
	})
}

func TestAccInventory_canaryAndUnreachable(t *testing.T) {
	testAccPreCheck(t)
	testharness.RequireDocker(t)
	h := newAccHost(t)
	dir := t.TempDir()
	canary := func(image string) {
		must(t, os.WriteFile(filepath.Join(dir, "profile.sandbox-canary.yaml"), []byte(fmt.Sprintf(
			"name: profile.sandbox-canary\nversion: \"1\"\nextension: ext.compose-ssh\nsettings:\n  image: %s\n", image)), 0o644))
	}
	config := h.providerWith(t, fmt.Sprintf("  profiles_dir = %q", dir)) + `
data "sandboxer_host_inventory" "canary" {
  host       = "harness"
  run_canary = true
}
`
	unreachable := h.badHostsConfig(t) + `
data "sandboxer_host_inventory" "down" {
  host              = "unreachable"
  allow_unreachable = true
}
`
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{
				PreConfig: func() { canary(testharness.Image(t)) },
				Config:    config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.sandboxer_host_inventory.canary", tfjsonpath.New("canary_ok"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue("data.sandboxer_host_inventory.canary", tfjsonpath.New("canary_error"), knownvalue.StringExact("")),
				},
				Check: func(s *terraform.State) error {
					if ms := s.RootModule().Resources["data.sandboxer_host_inventory.canary"].Primary.Attributes["canary_ready_ms"]; ms == "0" || ms == "" {
						return fmt.Errorf("canary_ready_ms %q", ms)
					}
					if left := h.leftovers(t); len(left) > 0 {
						return fmt.Errorf("the canary left: %v", left)
					}
					return nil
				},
			},
			{
				PreConfig: func() { canary("sandboxer-no-such-image:never") },
				Config:    config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.sandboxer_host_inventory.canary", tfjsonpath.New("canary_ok"), knownvalue.Bool(false)),
				},
				Check: func(s *terraform.State) error {
					if e := s.RootModule().Resources["data.sandboxer_host_inventory.canary"].Primary.Attributes["canary_error"]; !strings.Contains(e, "compose up failed") {
						return fmt.Errorf("canary_error %q", e)
					}
					if left := h.leftovers(t); len(left) > 0 {
						return fmt.Errorf("the failed canary left: %v", left)
					}
					return nil
				},
			},
			{
				Config: unreachable,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.sandboxer_host_inventory.down", tfjsonpath.New("reachable"), knownvalue.Bool(false)),
					statecheck.ExpectKnownValue("data.sandboxer_host_inventory.down", tfjsonpath.New("unreachable_reason"), knownvalue.StringRegexp(regexp.MustCompile(`unable to connect`))),
				},
			},
		},
	})
}

// eventSink is a local HTTP server that records events with valid signatures.
type eventSink struct {
	mu       sync.Mutex
	got      []events.Event
	badSigns int
}

func (e *eventSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	e.mu.Lock()
	defer e.mu.Unlock()
	if r.Header.Get(events.SignatureHeader) != events.Sign("hook-secret", body) {
		e.badSigns++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var ev events.Event
	if err := json.Unmarshal(body, &ev); err != nil {
		// A signed body that is not an event: the provider sent garbage.
		e.badSigns++
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	e.got = append(e.got, ev)
}

func (e *eventSink) names() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var n []string
	for _, ev := range e.got {
		n = append(n, ev.Event+"/"+ev.Actor)
	}
	return strings.Join(n, " ")
}

func TestAccEvents(t *testing.T) {
	testAccPreCheck(t)
	h := newAccHost(t)
	sink := &eventSink{}
	srv := httptest.NewServer(sink)
	defer srv.Close()
	config := h.providerWith(t, fmt.Sprintf("  events_url = %q\n  events_secret = \"hook-secret\"\n  actor = \"agt\"", srv.URL)) + `
resource "sandboxer_sandbox" "ws" {
  profile = "profile.workspace"
}
resource "sandboxer_snapshot" "s" {
  sandbox_id = sandboxer_sandbox.ws.id
  name       = "evented"
}
resource "sandboxer_restore" "r" {
  snapshot_id = sandboxer_snapshot.s.id
}
`
	unreachable := h.providerWith(t, `  events_url = "http://127.0.0.1:1/hook"`) + `
resource "sandboxer_sandbox" "ws" {
  profile = "profile.workspace"
}
`
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(*terraform.State) error {
			got := sink.names()
			for want, n := range map[string]int{"sandbox.created/agt": 2, "sandbox.ready/agt": 2, "snapshot.created/agt": 1,
				"restore.completed/agt": 1, "snapshot.deleted/agt": 1, "sandbox.destroyed/agt": 2} {
				if c := strings.Count(" "+got+" ", " "+want+" "); c != n {
					return fmt.Errorf("event %s received %d times, want %d (the restore's new sandbox counts); got %s", want, c, n, got)
				}
			}
			if sink.badSigns > 0 {
				return fmt.Errorf("%d events rejected (bad signature or not an event)", sink.badSigns)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{Config: config},
			{Config: config, Destroy: true},
			{
				// An unreachable events URL: the apply succeeds (a warning only).
				Config: unreachable,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("sandboxer_sandbox.ws", tfjsonpath.New("status"), knownvalue.StringExact("ready")),
				},
			},
		},
	})
}
