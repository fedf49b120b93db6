package swarm

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/composefile"
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
	inputs := repoWith(t, `name: app
services:
  web:
    image: busybox
    container_name: fixed
  builder:
    build: .
  api:
    image: busybox
    profiles: [debug]
    depends_on:
      db:
        condition: service_healthy
  db:
    image: busybox
  migrate:
    image: busybox
    deploy:
      mode: replicated-job
`)
	if err := os.WriteFile(filepath.Join(inputs["repo"], "Dockerfile"), []byte("FROM scratch\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := New().Plan(profile(t), inputs, nil, backends.PlanOptions{})
	if err == nil {
		t.Fatal("plan accepted what docker stack deploy refuses")
	}
	for _, want := range []string{
		`line 1: top-level "name": docker stack deploy reads compose file format 3`,
		`line 5: service "web" sets container_name`,
		`line 7: service "builder" has build and no image: swarm does not build images`,
		`line 10: service "api" sets profiles: docker stack deploy reads compose file format 3`,
		`line 11: service "api" lists depends_on with conditions`,
		`line 19: service "migrate" is a replicated-job`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestPlanServicesAndWarnings(t *testing.T) {
	inputs := repoWith(t, `version: "3.8"
x-common: &common
  image: busybox
services:
  web:
    image: busybox
    build: .
    ports: ["8080:80"]
    depends_on: [db]
    x-note: kept
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
	if err := os.WriteFile(filepath.Join(inputs["repo"], "Dockerfile"), []byte("FROM scratch\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, err := New().Plan(profile(t), inputs, nil, backends.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(plan.Services, ","); got != "cache,db,web" {
		t.Fatalf("services %s", got)
	}
	all := fmt.Sprint(plan.Warnings)
	if !strings.Contains(all, `service "web" publishes 8080:80: each sandbox gets a free port`) || !strings.Contains(all, `service "db" mounts volume "data" but is not pinned`) ||
		!strings.Contains(all, `service "web" has build: swarm does not build it, the nodes run image "busybox"`) {
		t.Fatalf("warnings:\n%s", all)
	}
	if strings.Contains(all, `"cache"`) {
		t.Fatalf("a pinned service's volume is warned about:\n%s", all)
	}
	// As written, the fixed port collides across sandboxes on the swarm.
	plan, err = New().Plan(profile(t), inputs, nil, backends.PlanOptions{PublishedPorts: backends.PortsAsWritten})
	if err != nil || !strings.Contains(fmt.Sprint(plan.Warnings), `service "web" publishes port 8080 on every node`) {
		t.Fatalf("as written: %v %v", plan.Warnings, err)
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
		"id|s1|sbx-a_web|80/tcp=30001 53/udp=30002 \nid|s2|sbx-a_db|\nnode|n1|Ready\nnode|n2|" + n2 + "\nnoise\n"
	for _, t := range tasks {
		out += "task|" + strings.ReplaceAll(t, " ", "|") + "\n"
	}
	return out
}

func TestParseServicesAndStatus(t *testing.T) {
	got := parseServices(svcOutput("Ready", "s1 n1 running", "s1 n2 running", "s2 n1 starting"), "sbx-a")
	webPorts := []backends.Port{{Target: 53, Protocol: "udp", HostIP: "0.0.0.0", Published: 30002}, {Target: 80, Protocol: "tcp", HostIP: "0.0.0.0", Published: 30001}}
	if len(got) != 2 || !reflect.DeepEqual(got[0], service{"web", 2, 2, webPorts}) || !reflect.DeepEqual(got[1], service{"db", 0, 1, nil}) {
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
		{"scaled to zero as asked", true, "service|sbx-a_web|0/0\nservice|sbx-a_db|1/1\nid|s2|sbx-a_db\nnode|n1|Ready\ntask|s2|n1|running\n", backends.StatusReady},
		{"no services", true, "", backends.StatusStopped},
		{"workspace gone", false, svcOutput("Ready", "s1 n1 running", "s1 n2 running", "s2 n2 running"), backends.StatusMissing},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// A record without declared replicas (written before them):
			// the engine's desired count is the measure.
			st := status(c.workspace, parseServices(c.out, "sbx-a"), []string{"db", "web"}, nil)
			if st.State != c.want {
				t.Fatalf("state %s, want %s (%s)", st.State, c.want, backends.Describe(st.Services))
			}
		})
	}
}

// With the replicas the compose file declares in the record, a service
// scaled out of band is measured against the file, not against the
// engine's new desired count.
func TestStatusAgainstDeclaredReplicas(t *testing.T) {
	declared := map[string]int{"web": 2, "db": 1}
	cases := []struct {
		name     string
		out      string
		replicas map[string]int
		want     string
		services string
	}{
		{"as declared", svcOutput("Ready", "s1 n1 running", "s1 n2 running", "s2 n2 running"), declared,
			backends.StatusReady, "db=running, web=running"},
		{"web scaled to 0", "service|sbx-a_web|0/0\nservice|sbx-a_db|1/1\nid|s1|sbx-a_web\nid|s2|sbx-a_db\nnode|n1|Ready\ntask|s2|n1|running\n", declared,
			backends.StatusDegraded, "db=running, web=stopped"},
		{"web scaled to 1", "service|sbx-a_web|1/1\nservice|sbx-a_db|1/1\nid|s1|sbx-a_web\nid|s2|sbx-a_db\nnode|n1|Ready\ntask|s1|n1|running\ntask|s2|n1|running\n", declared,
			backends.StatusDegraded, "db=running, web=partial"},
		{"everything scaled to 0", "service|sbx-a_web|0/0\nservice|sbx-a_db|0/0\nid|s1|sbx-a_web\nid|s2|sbx-a_db\nnode|n1|Ready\n", declared,
			backends.StatusStopped, "db=stopped, web=stopped"},
		{"scaled up: nothing declared is missing", "service|sbx-a_web|3/3\nservice|sbx-a_db|1/1\nid|s1|sbx-a_web\nid|s2|sbx-a_db\nnode|n1|Ready\n" +
			"task|s1|n1|running\ntask|s1|n1|running\ntask|s1|n1|running\ntask|s2|n1|running\n", declared,
			backends.StatusReady, "db=running, web=running"},
		{"declared 0 replicas", "service|sbx-a_web|0/0\nservice|sbx-a_db|1/1\nid|s2|sbx-a_db\nnode|n1|Ready\ntask|s2|n1|running\n",
			map[string]int{"web": 0, "db": 1}, backends.StatusReady, "db=running, web=running"},
		// web is global: the record names no replicas for it, and the
		// engine's count (one per eligible node) is the measure.
		{"global service", "service|sbx-a_web|2/3\nservice|sbx-a_db|1/1\nid|s1|sbx-a_web\nid|s2|sbx-a_db\nnode|n1|Ready\nnode|n2|Ready\n" +
			"task|s1|n1|running\ntask|s1|n2|running\ntask|s2|n1|running\n", map[string]int{"db": 1},
			backends.StatusDegraded, "db=running, web=partial"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := status(true, parseServices(c.out, "sbx-a"), []string{"db", "web"}, c.replicas)
			if st.State != c.want || backends.Describe(st.Services) != c.services {
				t.Fatalf("state %s (%s), want %s (%s)", st.State, backends.Describe(st.Services), c.want, c.services)
			}
		})
	}
}

// The replicas a compose file declares: deploy.replicas, 1 when unset
// (also with a deploy block without replicas), none for a global service.
func TestDeclaredReplicas(t *testing.T) {
	inputs := repoWith(t, `services:
  plain:
    image: busybox
  two:
    image: busybox
    deploy:
      replicas: 2
  zero:
    image: busybox
    deploy:
      mode: replicated
      replicas: 0
  placed:
    image: busybox
    deploy:
      placement:
        constraints: ["node.role == manager"]
  everywhere:
    image: busybox
    deploy:
      mode: global
  fromenv:
    image: busybox
    deploy:
      replicas: ${N}
`)
	l, err := composefile.Load(inputs, map[string]string{"N": "3"})
	if err != nil {
		t.Fatal(err)
	}
	got := declaredReplicas(l.Project)
	want := map[string]int{"plain": 1, "two": 2, "zero": 0, "placed": 1, "fromenv": 3}
	if !maps.Equal(got, want) {
		t.Fatalf("declared %v, want %v", got, want)
	}
}

// A restore reads the services and their replicas from what the manager
// deployed from the restored compose file.
func TestParseDeployed(t *testing.T) {
	services, replicas := parseDeployed("sbx-a_web|2\nsbx-a_db|1\nsbx-a_agent|\nsbx-ab_web|5\nsbx-a_|1\nnoise\n", "sbx-a")
	if strings.Join(services, ",") != "agent,db,web" || !maps.Equal(replicas, map[string]int{"web": 2, "db": 1}) {
		t.Fatalf("services %v, replicas %v", services, replicas)
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
		"remove":         removeStackScript("sbx-a", true, removeWait),
		"remove, no vol": removeStackScript("sbx-a", false, removeWait),
		"services":       servicesScript(sb),
		"deployed":       deployedServicesScript("sbx-a"),
	} {
		out, err := exec.Command("sh", "-n", "-c", script).CombinedOutput()
		if err != nil {
			t.Errorf("%s: %v\n%s\n%s", name, err, out, script)
		}
	}
}

// The workspace .env is exported for docker stack deploy's interpolation as
// compose reads it; lines that are not assignments, and names that would
// redirect the docker CLI, are skipped, under dash and bash alike.
func TestDotEnvExport(t *testing.T) {
	dir := t.TempDir()
	env := "A=plain\r\nexport B=\"double quoted\"\nC='single $HOME'\n  # indented comment\nD=x=y \\ $z\n" +
		"DOCKER_HOST=tcp://elsewhere\nPATH=/nowhere\nnot an assignment\n1BAD=x\nE=\"\nF=last"
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte(env), 0o600); err != nil {
		t.Fatal(err)
	}
	script := "cd " + dir + "\n" + dotEnvExport + `printf '%s|' "$A" "$B" "$C" "$D" "$E" "$F" "${DOCKER_HOST-unset}" "$PATH"`
	for _, sh := range []string{"sh", "bash"} {
		cmd := exec.Command(sh, "-c", script)
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v: %s", sh, err, out)
		}
		want := `plain|double quoted|single $HOME|x=y \ $z|"|last|unset|/usr/bin:/bin|`
		if string(out) != want {
			t.Errorf("%s exported\n%q, want\n%q", sh, out, want)
		}
	}
}

// The removal waits removeWait at most, less within a context whose
// deadline is nearer, so that the script says what remains before the
// context cuts its session.
func TestRemoveWaitFor(t *testing.T) {
	if got := removeWaitFor(context.Background()); got != removeWait {
		t.Errorf("without a deadline: %s", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	if got := removeWaitFor(ctx); got > 40*time.Second-removeMargin || got < 25*time.Second {
		t.Errorf("within 40 s: %s", got)
	}
	ctx, cancel = context.WithTimeout(context.Background(), removeMargin/2)
	defer cancel()
	if got := removeWaitFor(ctx); got != time.Second {
		t.Errorf("within %s: %s", removeMargin/2, got)
	}
}

// A swarm stack gets the host's policy and limits, as a compose host's
// stack does, beside what stack deploy itself refuses.
func TestPlanChecksTheHostsRules(t *testing.T) {
	inputs := repoWith(t, `services:
  web:
    image: busybox
    cap_add: [SYS_ADMIN]
    volumes: ["/etc:/host-etc"]
    deploy:
      resources:
        limits: {memory: 4g}
`)
	rules := backends.Rules{Policy: backends.Policy{Level: backends.PolicyBaseline}, Max: backends.Limits{Memory: 1 << 30}}
	_, err := New().Plan(profile(t), inputs, nil, backends.PlanOptions{Rules: rules})
	if err == nil {
		t.Fatal("a baseline host planned an added capability and a host bind mount")
	}
	for _, want := range []string{`cap_add SYS_ADMIN is beyond Docker's default capabilities`, `bind mount /etc is outside the repo`,
		`memory limit 4GiB is above the host's max_limits.memory 1GiB`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, err := New().Plan(profile(t), inputs, nil, backends.PlanOptions{}); err != nil {
		t.Fatalf("a trusted host without limits refused the stack: %v", err)
	}
}
