package provider

import (
	"fmt"
	"os"
	"os/user"
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

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// swarmConfig is a provider block whose host "swarm" is the harness
// swarm's manager, reached over SSH like any host.
func swarmConfig(t *testing.T, sw *testharness.Swarm, root string) string {
	t.Helper()
	return swarmConfigAs(t, sw, testharness.Env(t, "SANDBOXER_TEST_SSH_USER"), root)
}

func swarmConfigAs(t *testing.T, sw *testharness.Swarm, user, root string) string {
	t.Helper()
	return fmt.Sprintf(`
provider "sandboxer" {
  host {
    name             = "swarm"
    address          = %q
    user             = %q
    private_key_file = %q
    known_hosts_file = %q
    root_dir         = %q
  }
}
`, sw.SSHAddr, user, testharness.Env(t, "SANDBOXER_TEST_SSH_KEY"), sw.KnownHosts, root)
}

// swarmRepo writes a compose file for a stack: "web", 3 replicas, at most
// one per node (so spread over the nodes), with a healthcheck; "keeper",
// pinned to the manager node, with a named volume. pinnedOnly leaves web out.
func swarmRepo(t *testing.T, managerID string, pinnedOnly bool) string {
	t.Helper()
	loop := `["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]`
	compose := "services:\n"
	if !pinnedOnly {
		// A fixed published port, as people write it: each sandbox gets
		// a port of the swarm's own range instead.
		compose += `  web:
    image: ` + testharness.Image(t) + `
    command: ` + loop + `
    ports: ["8088:80"]
    healthcheck:
      test: ["CMD", "true"]
      interval: 1s
      retries: 3
    deploy:
      replicas: 3
      placement:
        max_replicas_per_node: 1
`
	}
	compose += `  keeper:
    image: ` + testharness.Image(t) + `
    command: ["sh", "-c", "trap 'exit 0' TERM; date > /data/started; while true; do sleep 1; done"]
    volumes: ["data:/data"]
    deploy:
      placement:
        constraints: ["node.id == ` + managerID + `"]
volumes:
  data: {}
`
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "compose.yaml"), []byte(compose), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "state.txt"), []byte("known good\n"), 0o644))
	return dir
}

// swarmLeftovers asks every node's engine what remains of a stack:
// services, networks and tasks (the manager's view), containers and
// volumes (each node's own). A stopped container on a worker is left out
// unless stopped is set: destroy returns once the manager lists no task of
// the stack, and the workers' agents remove the containers of the deleted
// tasks after that, unseen by the manager (swarm.removeStackScript).
func swarmLeftovers(t *testing.T, sw *testharness.Swarm, stack string, stopped bool) []string {
	t.Helper()
	var left []string
	filter := "label=com.docker.stack.namespace=" + stack
	nodes, err := sw.Docker(1, "node", "ls", "-q")
	if err != nil {
		return []string{fmt.Sprintf("node 1: docker node ls: %v %s", err, nodes)}
	}
	for n := range sw.Nodes {
		kinds := [][]string{{"ps", "-a", "--format", "{{.ID}} {{.State}}"}, {"volume", "ls", "-q"}}
		if n == 0 {
			kinds = append(kinds, []string{"service", "ls", "-q"}, []string{"network", "ls", "-q"},
				append([]string{"node", "ps", "-q"}, strings.Fields(nodes)...))
		}
		for _, k := range kinds {
			out, err := sw.Docker(n+1, append(k, "--filter", filter)...)
			if err != nil {
				left = append(left, fmt.Sprintf("node %d: docker %s: %v %s", n+1, strings.Join(k, " "), err, out))
				continue
			}
			for line := range strings.Lines(out) {
				what, state, _ := strings.Cut(strings.TrimSpace(line), " ")
				if what == "" || n > 0 && k[0] == "ps" && !stopped && (state == "exited" || state == "dead" || state == "removing") {
					continue
				}
				left = append(left, fmt.Sprintf("node %d: %s %s", n+1, strings.Join(k[:2], " "), strings.TrimSpace(line)))
			}
		}
	}
	return left
}

// swarmNothingLeft is a CheckDestroy asking every node for what remains of
// the stacks and the filesystem for workspaces under root; then it waits,
// bounded, for the workers' agents to remove the stopped containers of the
// stacks' deleted tasks.
func swarmNothingLeft(t *testing.T, sw *testharness.Swarm, stacks *[]string, root string) func(*terraform.State) error {
	return func(*terraform.State) error {
		var left []string
		for _, stack := range *stacks {
			left = append(left, swarmLeftovers(t, sw, stack, false)...)
		}
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			if e.Name() != ".sandboxer" {
				left = append(left, "workspace "+e.Name())
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("destroy left: %s", strings.Join(left, ", "))
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			left = nil
			for _, stack := range *stacks {
				left = append(left, swarmLeftovers(t, sw, stack, true)...)
			}
			if len(left) == 0 {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("30 s after destroy, the workers still hold: %s", strings.Join(left, ", "))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// nodesRunning counts the nodes running a task of service (docker node ps
// on each node: node hostnames may be alike).
func nodesRunning(t *testing.T, sw *testharness.Swarm, service string) (int, error) {
	t.Helper()
	ids, err := sw.Docker(1, "node", "ls", "-q")
	if err != nil {
		return 0, fmt.Errorf("docker node ls: %v %s", err, ids)
	}
	n := 0
	for _, id := range strings.Fields(ids) {
		out, err := sw.Docker(1, "node", "ps", id, "--filter", "desired-state=running", "--format", "{{.Name}} {{.CurrentState}}")
		if err != nil {
			return 0, fmt.Errorf("docker node ps %s: %v %s", id, err, out)
		}
		for line := range strings.Lines(out) {
			if strings.HasPrefix(line, service+".") && strings.Contains(line, "Running") {
				n++
				break
			}
		}
	}
	return n, nil
}

// A stack on a three-node swarm: spread over the nodes, listed nodes in the
// inventory, a snapshot refused while a service may move, a node lost
// (degraded on refresh, converged once back), a pinned stack checkpointed
// and restored in place, and nothing left on any node after destroy.
func TestAccSwarm_stack(t *testing.T) {
	testAccPreCheck(t)
	testharness.Alone(t) // it stops a node of the swarm the other tests share
	sw := testharness.StartedSwarm(t)
	managerID, err := sw.Docker(1, "info", "--format", "{{.Swarm.NodeID}}")
	must(t, err)
	managerID = strings.TrimSpace(managerID)
	root := t.TempDir()
	repo := swarmRepo(t, managerID, false)
	pinnedRepo := swarmRepo(t, managerID, true)
	var stacks []string
	var pinnedWS string

	cfg := swarmConfig(t, sw, root) + fmt.Sprintf(`
resource "sandboxer_sandbox" "stack" {
  profile = "profile.swarm-e2e"
  host    = "swarm"
  inputs  = { repo = %q }
}

data "sandboxer_host_inventory" "manager" {
  host       = "swarm"
  depends_on = [sandboxer_sandbox.stack]
}
`, repo)
	unpinnedSnap := `
resource "sandboxer_snapshot" "loose" {
  sandbox_id = sandboxer_sandbox.stack.id
  name       = "loose"
}
`
	pinned := fmt.Sprintf(`
resource "sandboxer_sandbox" "pinned" {
  profile = "profile.swarm-e2e"
  host    = "swarm"
  inputs  = { repo = %q }
}
`, pinnedRepo)
	pinnedSnap := `
resource "sandboxer_snapshot" "good" {
  sandbox_id = sandboxer_sandbox.pinned.id
  name       = "good"
  quiesce    = "stop"
}
`
	rollback := `
resource "sandboxer_restore" "back" {
  snapshot_id       = sandboxer_snapshot.good.id
  target_sandbox_id = sandboxer_sandbox.pinned.id
}

# A new stack from the snapshot alone: its compose file comes from the
# restored workspace.
resource "sandboxer_restore" "fresh" {
  snapshot_id = sandboxer_snapshot.good.id
  host        = "swarm"
}
`
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             swarmNothingLeft(t, sw, &stacks, root),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("sandboxer_sandbox.stack", tfjsonpath.New("status"), knownvalue.StringExact("ready")),
					statecheck.ExpectKnownValue("sandboxer_sandbox.stack", tfjsonpath.New("extension"), knownvalue.StringExact("ext.swarm")),
					statecheck.ExpectKnownValue("sandboxer_sandbox.stack", tfjsonpath.New("endpoints").AtMapKey("web:80"), knownvalue.StringRegexp(regexp.MustCompile(`:3[0-2]\d{3}$`))),
					statecheck.ExpectKnownValue("data.sandboxer_host_inventory.manager", tfjsonpath.New("swarm_nodes"), knownvalue.ListSizeExact(3)),
					statecheck.ExpectKnownValue("data.sandboxer_host_inventory.manager", tfjsonpath.New("sandboxes").AtSliceIndex(0).AtMapKey("status"), knownvalue.StringExact("ready")),
				},
				Check: func(s *terraform.State) error {
					stack := stateAttr(s, "sandboxer_sandbox.stack", "compose_project")
					stacks = append(stacks, stack)
					n, err := nodesRunning(t, sw, stack+"_web")
					if err != nil {
						return err
					}
					if n < 2 {
						return fmt.Errorf("web runs on %d node(s), want at least 2", n)
					}
					return nil
				},
			},
			{
				// A service that may move cannot be checkpointed: the plan says so.
				Config:      cfg + unpinnedSnap,
				ExpectError: regexp.MustCompile(`(?s)need every service\s+pinned to one\s+node, and web\s+is not`),
			},
			{
				// A worker's engine stops: swarm cannot place web's third
				// replica anywhere else (one per node), and refresh sees
				// the stack below its replicas.
				PreConfig: func() {
					node3, err := sw.Docker(3, "info", "--format", "{{.Swarm.NodeID}}")
					must(t, err)
					sw.NodeStop(3)
					waitNodeDown(t, sw, strings.TrimSpace(node3))
				},
				RefreshState:       true,
				ExpectNonEmptyPlan: true,
				Check:              resource.TestCheckResourceAttr("sandboxer_sandbox.stack", "status", "degraded"),
			},
			{
				// Back: the next apply converges.
				PreConfig: func() { sw.NodeStart(3) },
				Config:    cfg,
				Check: func(s *terraform.State) error {
					stack := stateAttr(s, "sandboxer_sandbox.stack", "compose_project")
					if stack != stacks[0] {
						stacks = append(stacks, stack) // replaced
					}
					return resource.TestCheckResourceAttr("sandboxer_sandbox.stack", "status", "ready")(s)
				},
			},
			{
				Config: cfg + pinned + pinnedSnap,
				ConfigStateChecks: []statecheck.StateCheck{
					// compose.yaml, state.txt
					statecheck.ExpectKnownValue("sandboxer_snapshot.good", tfjsonpath.New("file_count"), knownvalue.Int64Exact(2)),
					statecheck.ExpectKnownValue("sandboxer_snapshot.good", tfjsonpath.New("include_volumes"), knownvalue.Bool(false)),
					statecheck.ExpectKnownValue("sandboxer_sandbox.pinned", tfjsonpath.New("status"), knownvalue.StringExact("ready")),
				},
				Check: func(s *terraform.State) error {
					stacks = append(stacks, stateAttr(s, "sandboxer_sandbox.pinned", "compose_project"))
					pinnedWS = stateAttr(s, "sandboxer_sandbox.pinned", "workspace_dir")
					return nil
				},
			},
			{
				PreConfig: func() { writeFile(t, pinnedWS, "state.txt", "BROKEN\n") },
				Config:    cfg + pinned + pinnedSnap + rollback,
				Check: func(s *terraform.State) error {
					if err := fileIs(pinnedWS, "state.txt", "known good\n"); err != nil {
						return fmt.Errorf("in-place restore: %w", err)
					}
					fresh := "sbx-" + stateAttr(s, "sandboxer_restore.fresh", "sandbox_id")
					stacks = append(stacks, fresh)
					if err := fileIs(stateAttr(s, "sandboxer_restore.fresh", "workspace_dir"), "state.txt", "known good\n"); err != nil {
						return fmt.Errorf("restore into a new sandbox: %w", err)
					}
					if n, err := nodesRunning(t, sw, fresh+"_keeper"); err != nil || n != 1 {
						return fmt.Errorf("the restored stack's keeper runs on %d node(s) (%v), want 1", n, err)
					}
					return resource.TestCheckResourceAttr("sandboxer_sandbox.pinned", "status", "ready")(s)
				},
			},
			{
				// Refreshed after the restore redeployed it: still ready.
				Config:   cfg + pinned + pinnedSnap + rollback,
				PlanOnly: true,
			},
		},
	})
}

// A service scaled out of band through the manager (`docker service scale
// web=0`) leaves the engine's desired count met, but not the replicas the
// compose file declares: refresh records the sandbox degraded, and the
// next plan replaces it, which runs the declared replicas again.
func TestAccSwarm_scaledOutOfBand(t *testing.T) {
	testAccPreCheck(t)
	sw := testharness.StartedSwarm(t)
	managerID, err := sw.Docker(1, "info", "--format", "{{.Swarm.NodeID}}")
	must(t, err)
	root := t.TempDir()
	repo := swarmRepo(t, strings.TrimSpace(managerID), false)
	var stacks []string
	cfg := swarmConfig(t, sw, root) + fmt.Sprintf(`
resource "sandboxer_sandbox" "stack" {
  profile = "profile.swarm-e2e"
  host    = "swarm"
  inputs  = { repo = %q }
}
`, repo)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             swarmNothingLeft(t, sw, &stacks, root),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("sandboxer_sandbox.stack", tfjsonpath.New("status"), knownvalue.StringExact("ready")),
				},
				Check: func(s *terraform.State) error {
					stacks = append(stacks, stateAttr(s, "sandboxer_sandbox.stack", "compose_project"))
					return nil
				},
			},
			{
				PreConfig: func() {
					if out, err := sw.Docker(1, "service", "scale", "--detach", stacks[0]+"_web=0"); err != nil {
						t.Fatalf("docker service scale: %v\n%s", err, out)
					}
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("sandboxer_sandbox.stack", plancheck.ResourceActionDestroyBeforeCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("sandboxer_sandbox.stack", tfjsonpath.New("status"), knownvalue.StringExact("ready")),
				},
				Check: func(s *terraform.State) error {
					stack := stateAttr(s, "sandboxer_sandbox.stack", "compose_project")
					if stack == stacks[0] {
						return fmt.Errorf("stack %s was kept, not replaced", stack)
					}
					stacks = append(stacks, stack)
					n, err := nodesRunning(t, sw, stack+"_web")
					if err != nil {
						return err
					}
					if n != 3 {
						return fmt.Errorf("the replacement's web runs on %d node(s), want 3", n)
					}
					return nil
				},
			},
		},
	})
}

// waitNodeDown polls the manager until it declares node down (after missed
// heartbeats, ~12 s here: no fixed wait).
func waitNodeDown(t *testing.T, sw *testharness.Swarm, node string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, err := sw.Docker(1, "node", "inspect", node, "--format", "{{.Status.State}}")
		if err == nil && strings.TrimSpace(out) == "down" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the manager did not declare node %s down: %v %s", node, err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A non-root SSH user in the docker group deploys, checkpoints and
// removes a stack as root does, its root_dir under its home.
func TestAccSwarm_nonRootUser(t *testing.T) {
	testAccPreCheck(t)
	sw := testharness.StartedSwarm(t)
	name := testharness.Env(t, "SANDBOXER_TEST_SSH_NONROOT_USER")
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatalf("harness user %s: %v", name, err)
	}
	nr := newNonRoot(t, u)
	managerID, err := sw.Docker(1, "info", "--format", "{{.Swarm.NodeID}}")
	must(t, err)
	repo := swarmRepo(t, strings.TrimSpace(managerID), true)
	var stacks []string
	cfg := swarmConfigAs(t, sw, name, nr.acc.rootDir) + fmt.Sprintf(`
resource "sandboxer_sandbox" "stack" {
  profile = "profile.swarm-e2e"
  host    = "swarm"
  inputs  = { repo = %q }
}

resource "sandboxer_snapshot" "good" {
  sandbox_id = sandboxer_sandbox.stack.id
  name       = "good"
}
`, repo)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             swarmNothingLeft(t, sw, &stacks, nr.acc.rootDir),
		Steps: []resource.TestStep{{
			Config: cfg,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("sandboxer_sandbox.stack", tfjsonpath.New("status"), knownvalue.StringExact("ready")),
				statecheck.ExpectKnownValue("sandboxer_snapshot.good", tfjsonpath.New("file_count"), knownvalue.Int64Exact(2)),
			},
			Check: func(s *terraform.State) error {
				stacks = append(stacks, stateAttr(s, "sandboxer_sandbox.stack", "compose_project"))
				return nr.ownedBy(stateAttr(s, "sandboxer_sandbox.stack", "workspace_dir"))
			},
		}},
	})
}

// desired_state on a swarm stack: every service scaled to 0 and back to
// the replicas its compose file declares, in place; a command runs in the
// task on the manager's node.
func TestAccSwarm_desiredState(t *testing.T) {
	testAccPreCheck(t)
	sw := testharness.StartedSwarm(t)
	managerID, err := sw.Docker(1, "info", "--format", "{{.Swarm.NodeID}}")
	must(t, err)
	root := t.TempDir()
	repo := swarmRepo(t, strings.TrimSpace(managerID), false)
	config := func(desired string, extra string) string {
		return swarmConfig(t, sw, root) + fmt.Sprintf(`
resource "sandboxer_sandbox" "stack" {
  profile       = "profile.swarm-e2e"
  host          = "swarm"
  inputs        = { repo = %q }
  desired_state = %q
}
`, repo, desired) + extra
	}
	read := `
resource "sandboxer_command" "started" {
  sandbox_id = sandboxer_sandbox.stack.id
  service    = "keeper"
  command    = ["cat", "/data/started"]
}
`
	sandbox := "sandboxer_sandbox.stack"
	var id string
	var stacks []string
	running := func(want string) resource.TestCheckFunc {
		return func(s *terraform.State) error {
			out, err := sw.Docker(1, "service", "ls", "--filter", "label=com.docker.stack.namespace=sbx-"+id, "--format", "{{.Name}} {{.Replicas}}")
			if err != nil {
				return fmt.Errorf("docker service ls: %v %s", err, out)
			}
			if got := strings.Join(strings.Fields(strings.TrimSpace(out)), " "); !regexp.MustCompile(want).MatchString(got) {
				return fmt.Errorf("services of sbx-%s: %q, want %s", id, got, want)
			}
			return nil
		}
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             swarmNothingLeft(t, sw, &stacks, root),
		Steps: []resource.TestStep{
			{
				Config: config("running", read),
				Check: func(s *terraform.State) error {
					id = stateAttr(s, sandbox, "id")
					stacks = append(stacks, stateAttr(s, sandbox, "compose_project"))
					if out := stateAttr(s, "sandboxer_command.started", "stdout"); out == "" {
						return fmt.Errorf("the command in keeper printed nothing")
					}
					return nil
				},
			},
			{
				Config: config("stopped", read),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(sandbox, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(sandbox, tfjsonpath.New("status"), knownvalue.StringExact("stopped")),
					statecheck.ExpectKnownValue(sandbox, tfjsonpath.New("endpoints"), knownvalue.MapExact(map[string]knownvalue.Check{})),
				},
				Check: func(s *terraform.State) error { return running(`^sbx-\w+_keeper 0/0 sbx-\w+_web 0/0`)(s) },
			},
			{
				Config: config("running", read),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(sandbox, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(sandbox, tfjsonpath.New("status"), knownvalue.StringExact("ready")),
				},
				Check: func(s *terraform.State) error {
					if got := stateAttr(s, sandbox, "id"); got != id {
						return fmt.Errorf("the stack was replaced: %s, then %s", id, got)
					}
					return running(`^sbx-\w+_keeper 1/1 sbx-\w+_web 3/3`)(s)
				},
			},
		},
	})
}
