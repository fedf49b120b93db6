package swarm

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
)

func repoWith(t *testing.T, compose string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "compose.yaml"), []byte(compose), 0o644); err != nil {
		t.Fatal(err)
	}
	return map[string]string{"repo": dir}
}

func profile(t *testing.T) *catalog.Profile {
	t.Helper()
	c, err := catalog.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Get("profile.swarm-e2e")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPlanRefusesWhatSwarmIgnores(t *testing.T) {
	inputs := repoWith(t, `services:
  web:
    image: busybox
    container_name: fixed
  builder:
    build: .
  api:
    image: busybox
    depends_on:
      db:
        condition: service_healthy
  db:
    image: busybox
`)
	if err := os.WriteFile(filepath.Join(inputs["repo"], "Dockerfile"), []byte("FROM scratch\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := New().Plan(profile(t), inputs, nil)
	if err == nil {
		t.Fatal("plan accepted container_name, build and a depends_on condition")
	}
	for _, want := range []string{
		`line 4: service "web" sets container_name`,
		`line 6: service "builder" has build: swarm does not build images`,
		`service "api" waits for "db" to be healthy`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestPlanServicesAndWarnings(t *testing.T) {
	inputs := repoWith(t, `services:
  web:
    image: busybox
    ports: ["8080:80"]
    depends_on: [db]
    deploy:
      replicas: 2
  db:
    image: busybox
    volumes: [data:/data]
  cache:
    image: busybox
    volumes: [cache:/c]
    deploy:
      placement:
        constraints: ["node.hostname == n1"]
volumes:
  data: {}
  cache: {}
`)
	plan, err := New().Plan(profile(t), inputs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(plan.Services, ","); got != "cache,db,web" {
		t.Fatalf("services %s", got)
	}
	all := strings.Join(plan.Warnings, "\n")
	if !strings.Contains(all, `service "web" publishes port 8080`) || !strings.Contains(all, `service "db" mounts volume "data" but is not pinned`) {
		t.Fatalf("warnings:\n%s", all)
	}
	if strings.Contains(all, `"cache"`) {
		t.Fatalf("a pinned service's volume is warned about:\n%s", all)
	}
}

func TestPlanNeedsRepo(t *testing.T) {
	if err := New().Validate(profile(t), map[string]string{}); err == nil || !strings.Contains(err.Error(), "input repo is required") {
		t.Fatalf("got %v", err)
	}
}

// svcOutput is servicesScript's output for stack sbx-a: services web (2
// replicas) and db (1), nodes n1 (ready) and n2, tasks as given
// ("service node state").
func svcOutput(n2 string, tasks ...string) string {
	out := "service|sbx-a_web|2/2 (max 1 per node)\nservice|sbx-a_db|1/1\nservice|sbx-ab_web|3/3\n" +
		"id|s1|sbx-a_web\nid|s2|sbx-a_db\nnode|n1|Ready\nnode|n2|" + n2 + "\nnoise\n"
	for _, t := range tasks {
		out += "task|" + strings.ReplaceAll(t, " ", "|") + "\n"
	}
	return out
}

func TestParseServicesAndStatus(t *testing.T) {
	got := parseServices(svcOutput("Ready", "s1 n1 running", "s1 n2 running", "s2 n1 starting"), "sbx-a")
	if len(got) != 2 || got[0] != (service{"web", 2, 2}) || got[1] != (service{"db", 0, 1}) {
		t.Fatalf("parsed %+v", got)
	}
	cases := []struct {
		name      string
		workspace bool
		out       string
		want      string
	}{
		{"all replicas", true, svcOutput("Ready", "s1 n1 running", "s1 n2 running", "s2 n2 running"), backends.StatusReady},
		{"below replicas", true, svcOutput("Ready", "s1 n1 running", "s2 n2 running"), backends.StatusDegraded},
		// The engine still reports the task of a node that went down as
		// running: it does not count.
		{"a node down", true, svcOutput("Down", "s1 n1 running", "s1 n2 running", "s2 n1 running"), backends.StatusDegraded},
		{"one service gone", true, "service|sbx-a_web|2/2\nid|s1|sbx-a_web\nnode|n1|Ready\ntask|s1|n1|running\ntask|s1|n1|running\n", backends.StatusDegraded},
		{"nothing runs", true, svcOutput("Ready", "s1 n1 preparing"), backends.StatusStopped},
		{"no services", true, "", backends.StatusStopped},
		{"workspace gone", false, svcOutput("Ready", "s1 n1 running", "s1 n2 running", "s2 n2 running"), backends.StatusMissing},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := status(c.workspace, parseServices(c.out, "sbx-a"), []string{"db", "web"})
			if st.State != c.want {
				t.Fatalf("state %s, want %s (%s)", st.State, c.want, describe(st.Services))
			}
		})
	}
}

func TestCheckPinned(t *testing.T) {
	sb := &backends.Sandbox{ID: "a", ComposeProject: "sbx-a"}
	if err := checkPinned("sbx-a_web|node.hostname == n1\nsbx-a_db|node.role==manager;node.id==xyz\n", sb); err != nil {
		t.Fatal(err)
	}
	err := checkPinned("sbx-a_web|node.hostname == n1\nsbx-a_db|node.role==manager\nsbx-a_api|\n", sb)
	if err == nil || !strings.Contains(err.Error(), "api, db are not") {
		t.Fatalf("got %v", err)
	}
	if err := checkPinned("", sb); err == nil {
		t.Fatal("a stack without services was allowed a snapshot")
	}
	if err := New().CheckSnapshot(t.Context(), nil, sb, backends.QuiescePause, false); err == nil || !strings.Contains(err.Error(), "cannot be paused") {
		t.Fatalf("pause: %v", err)
	}
	if err := New().CheckSnapshot(t.Context(), nil, sb, backends.QuiesceNone, true); err == nil || !strings.Contains(err.Error(), "include_volumes = false") {
		t.Fatalf("volumes: %v", err)
	}
}

// The scripts are sh: a syntax error would show only on a host.
func TestScriptsParse(t *testing.T) {
	sb := &backends.Sandbox{ID: "a", ComposeProject: "sbx-a", ComposeFile: "compose.yaml", WorkspaceDir: "/w/a b"}
	for name, script := range map[string]string{
		"deploy":         deployScript(sb),
		"remove":         removeStackScript("sbx-a", true),
		"remove, no vol": removeStackScript("sbx-a", false),
		"services":       servicesScript(sb),
	} {
		out, err := exec.Command("sh", "-n", "-c", script).CombinedOutput()
		if err != nil {
			t.Errorf("%s: %v\n%s\n%s", name, err, out, script)
		}
	}
}
