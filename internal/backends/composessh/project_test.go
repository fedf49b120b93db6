package composessh

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/composefile"
)

// These run with no harness: plan-time compose rules read the client's copy only.

// loadPlan is loadProject of repo's docker-compose.yml with the default
// options, without the networks.
func loadPlan(repo string, env map[string]string) (backends.Plan, error) {
	st, err := loadProject(repo, "docker-compose.yml", env, backends.PlanOptions{})
	return st.plan, err
}

func repoWith(t *testing.T, compose string, extra map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"docker-compose.yml": compose}
	for k, v := range extra {
		files[k] = v
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestPlanListsServicesByName(t *testing.T) {
	repo := repoWith(t, `services:
  worker:
    image: busybox
    depends_on: [web]
  web:
    image: busybox
  api:
    image: busybox
  debug:
    image: busybox
    profiles: [debug]
`, nil)
	plan, err := loadPlan(repo, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Sorted, and without the service only a compose profile enables
	// (compose up starts it only when asked).
	if want := []string{"api", "web", "worker"}; !reflect.DeepEqual(plan.Services, want) {
		t.Fatalf("services = %v, want %v", plan.Services, want)
	}
	if len(plan.Warnings) != 0 {
		t.Fatalf("unexpected warnings: %v", plan.Warnings)
	}
}

func TestPlanDiagnosticsNameFileAndLine(t *testing.T) {
	cases := []struct {
		name, compose string
		extra         map[string]string
		line          int
		want          string
	}{
		{"invalid yaml", "services:\n  web:\n    image: [busybox\n", nil, 0, "yaml"},
		{"a tab in the indentation", "services:\n  web:\n    image: busybox\n  worker:\n\timage: busybox\n", nil, 5, ""},
		{"unknown key", "services:\n  web:\n    image: busybox\n    imagee: x\n", nil, 0, "imagee"},
		{"unknown dependency", "services:\n  web:\n    image: busybox\n    depends_on: [db]\n", nil, 0, "db"},
		{"build outside repo", "services:\n  web:\n    build: ../elsewhere\n", nil, 3, "outside the repo"},
		{"build from git", "services:\n  web:\n    build: https://example.invalid/app.git\n", nil, 3, "copied repo only"},
		{"missing Dockerfile", "services:\n  web:\n    build: ./app\n", map[string]string{"app/main.sh": "echo"}, 3, "Dockerfile"},
		{"no service", "services:\n  debug:\n    image: busybox\n    profiles: [debug]\n", nil, 0, "no service"},
		{"required variable", "services:\n  web:\n    image: ${IMAGE:?set IMAGE}\n", nil, 0, "IMAGE"},
		{"fixed name from an include", "include: [inc.yml]\nservices:\n  web:\n    image: busybox\n",
			map[string]string{"inc.yml": "services:\n  db:\n    image: busybox\n    volumes: [pgdata:/d]\nvolumes:\n  pgdata:\n    name: pgdata\n"}, 1, "from an included file"},
		{"multi-document", "services:\n  a:\n    image: busybox\n---\nservices:\n  b:\n    image: busybox\n", nil, 0, "more than one YAML document"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			repo := repoWith(t, c.compose, c.extra)
			_, err := loadPlan(repo, nil)
			var fe *composefile.FileError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a *composefile.FileError", err)
			}
			if fe.File != filepath.Join(repo, "docker-compose.yml") {
				t.Errorf("file = %s", fe.File)
			}
			if c.line > 0 && fe.Line != c.line {
				t.Errorf("line = %d, want %d (%v)", fe.Line, c.line, err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not mention %q", err, c.want)
			}
		})
	}
}

func TestPlanAcceptsBuildInsideRepo(t *testing.T) {
	repo := repoWith(t, "services:\n  web:\n    build: ./app\n", map[string]string{"app/Dockerfile": "FROM scratch\n"})
	plan, err := loadPlan(repo, nil)
	if err != nil || !reflect.DeepEqual(plan.Services, []string{"web"}) {
		t.Fatalf("plan = %v, %v", plan, err)
	}
}

func TestPlanWarnsWhatWeakensIsolation(t *testing.T) {
	repo := repoWith(t, `services:
  web:
    image: busybox
    ports: ["8080:80", "9090"]
    volumes:
      - /var/run/docker.sock:/var/run/docker.sock
      - ./data:/data
      - ~/cache:/cache
  db:
    image: busybox
    volumes: [pgdata:/var/lib/postgresql/data, cache:/cache, uploads:/uploads]
  agent:
    image: busybox
    network_mode: host
    privileged: true
    pid: host
volumes:
  pgdata:
    external: true
  cache:
    name: shared-cache
  uploads: {}
networks:
  shared:
    external: true
  fixed:
    name: fixed-net
`, map[string]string{"data/keep": ""})
	plan, err := loadPlan(repo, nil)
	if err != nil {
		t.Fatal(err)
	}
	bySummary := map[string]string{}
	for _, f := range plan.Warnings {
		if _, dup := bySummary[f.Summary]; dup {
			t.Errorf("summary %q given twice: one finding per kind", f.Summary)
		}
		bySummary[f.Summary] = f.Detail
	}
	want := map[string][]string{
		noteFreePorts:     {"8080:80", "line 4", `endpoints["web:80"]`},
		warnDockerSocket:  {"/var/run/docker.sock"},
		warnBindMount:     {"~/cache", "host's user"},
		warnHostNetwork:   {`"agent"`, "network_mode: host"},
		warnPrivileged:    {`"agent"`},
		warnHostPID:       {`"agent"`},
		warnExternal:      {`volume "pgdata" is external`, `network "shared" is external`},
		noteScopedNames:   {`volume "cache" is named "shared-cache"`, `"sbx-<id>_cache"`, `network "fixed" is named "fixed-net"`},
		noteContainerName: nil,
	}
	for summary, parts := range want {
		detail, ok := bySummary[summary]
		if parts == nil {
			if ok {
				t.Errorf("unexpected %q: %s", summary, detail)
			}
			continue
		}
		if !ok {
			t.Errorf("no %q finding; got %v", summary, plan.Warnings)
			continue
		}
		for _, p := range parts {
			if !strings.Contains(detail, p) {
				t.Errorf("%q does not mention %q:\n%s", summary, p, detail)
			}
		}
	}
	all := fmt.Sprint(plan.Warnings)
	if strings.Contains(all, "9090") || strings.Contains(all, "/data from") || strings.Contains(all, "uploads") {
		t.Errorf("warned about what is isolated:\n%s", all)
	}
	if home, _ := os.UserHomeDir(); home != "" && strings.Contains(all, home+"/cache") {
		t.Errorf("~ was named as this machine's home:\n%s", all)
	}
}

// As written, published ports stay fixed: the plan says which collide.
func TestPlanAsWrittenWarnsFixedPorts(t *testing.T) {
	repo := repoWith(t, "services:\n  web:\n    image: busybox\n    ports: [\"8080:80\", \"127.0.0.1:8443:443\", \"9090\"]\n", nil)
	st, err := loadProject(repo, "docker-compose.yml", nil, backends.PlanOptions{PublishedPorts: backends.PortsAsWritten})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range st.plan.Warnings {
		got[f.Summary] = f.Detail
	}
	if !strings.Contains(got[warnFixedPort], "host port 8080") || !strings.Contains(got[warnHostIPPort], "127.0.0.1") {
		t.Errorf("findings %v", st.plan.Warnings)
	}
	if _, ok := got[noteFreePorts]; ok || strings.Contains(fmt.Sprint(st.plan.Warnings), "9090") {
		t.Errorf("findings %v", st.plan.Warnings)
	}
}

// Every error in the file is reported at once, each with its line.
func TestPlanReportsEveryError(t *testing.T) {
	repo := repoWith(t, `services:
  a:
    build: ../one
  b:
    build: ../two
  c:
    build: https://example.invalid/app.git
`, nil)
	_, err := loadPlan(repo, nil)
	if err == nil {
		t.Fatal("accepted")
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok || len(joined.Unwrap()) != 3 {
		t.Fatalf("want 3 joined errors, got %v", err)
	}
	for i, line := range []int{3, 5, 7} {
		var fe *composefile.FileError
		if !errors.As(joined.Unwrap()[i], &fe) || fe.Line != line {
			t.Errorf("error %d: %v, want line %d", i, joined.Unwrap()[i], line)
		}
	}
}

// container_name is no longer refused: the plan says what it becomes.
func TestPlanNotesContainerNames(t *testing.T) {
	repo := repoWith(t, "services:\n  db:\n    image: busybox\n    container_name: shared-db\n", nil)
	plan, err := loadPlan(repo, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Warnings) != 1 || plan.Warnings[0].Summary != noteContainerName ||
		!strings.Contains(plan.Warnings[0].Detail, `"sbx-<id>-shared-db"`) || !strings.Contains(plan.Warnings[0].Detail, "line 4") {
		t.Fatalf("findings %v", plan.Warnings)
	}
}

func TestParsePorts(t *testing.T) {
	got := tidyPorts(parsePorts("0.0.0.0:49153->80/tcp, :::49153->80/tcp, 5432/tcp, 127.0.0.1:5000->5000/udp, 0.0.0.0:8000-8001->9000-9001/tcp, [::]:40000->443/tcp"))
	want := []backends.Port{
		{Target: 80, Protocol: "tcp", HostIP: "0.0.0.0", Published: 49153},
		{Target: 443, Protocol: "tcp", HostIP: "::", Published: 40000},
		{Target: 5000, Protocol: "udp", HostIP: "127.0.0.1", Published: 5000},
		{Target: 9000, Protocol: "tcp", HostIP: "0.0.0.0", Published: 8000},
		{Target: 9001, Protocol: "tcp", HostIP: "0.0.0.0", Published: 8001},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ports\n got %+v\nwant %+v", got, want)
	}
	st := parseStatus("workspace\nweb|running|Up 2 seconds|0.0.0.0:49153->80/tcp\ndb|running|Up 2 seconds|\n", &backends.Sandbox{Services: []string{"db", "web"}})
	if st.State != backends.StatusReady || len(st.Services[0].Ports) != 0 || len(st.Services[1].Ports) != 1 || st.Services[1].Ports[0].Published != 49153 {
		t.Fatalf("status %+v", st)
	}
}

// The one-shot rule: a service whose file says `restart: "no"` and whose
// container exited 0 has completed, and counts as ready; exited non-zero,
// or without the key, it has failed; and a stack where nothing else runs
// is stopped, not ready.
func TestOneShotServices(t *testing.T) {
	repo := repoWith(t, "services:\n  web:\n    image: busybox\n  migrate:\n    image: busybox\n    restart: \"no\"\n  worker:\n    image: busybox\n", nil)
	st, err := loadProject(repo, "docker-compose.yml", nil, backends.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sb := &backends.Sandbox{Services: []string{"migrate", "web", "worker"}, OneShot: oneShot(st.loaded.Project)}
	if !reflect.DeepEqual(sb.OneShot, []string{"migrate"}) {
		t.Fatalf("one-shot services %q, want only migrate", sb.OneShot)
	}
	for _, c := range []struct{ out, state, migrate, worker string }{
		{"migrate|exited|Exited (0) 2 seconds ago|\nweb|running|Up|\nworker|running|Up|\n", backends.StatusReady, "completed", "running"},
		{"migrate|exited|Exited (1) 2 seconds ago|\nweb|running|Up|\nworker|running|Up|\n", backends.StatusDegraded, "exited", "running"},
		{"migrate|exited|Exited (0) 2 seconds ago|\nweb|running|Up|\nworker|exited|Exited (0) 1 second ago|\n", backends.StatusDegraded, "completed", "exited"},
		{"migrate|exited|Exited (0) 9 seconds ago|\nweb|exited|Exited (0) 1 second ago|\nworker|exited|Exited (137) 1 second ago|\n", backends.StatusStopped, "completed", "exited"},
	} {
		st := parseStatus("workspace\n"+c.out, sb)
		if st.State != c.state || st.Services[0].State != c.migrate || st.Services[2].State != c.worker {
			t.Errorf("%q: %+v, want %s with migrate %s and worker %s", c.out, st, c.state, c.migrate, c.worker)
		}
	}
}

// Interpolation reads the .env the workspace will have: the sandbox's env
// when it has one (it replaces the repo's .env), else the repo's own.
func TestPlanInterpolatesFromTheWorkspaceEnv(t *testing.T) {
	repo := repoWith(t, "services:\n  web:\n    image: ${IMAGE:?set IMAGE}\n", map[string]string{".env": "IMAGE=busybox\n"})
	if _, err := loadPlan(repo, nil); err != nil {
		t.Fatalf("repo .env not read: %v", err)
	}
	if _, err := loadPlan(repo, map[string]string{"OTHER": "x"}); err == nil {
		t.Fatal("the sandbox's env replaces the repo .env, yet IMAGE was found")
	}
	if _, err := loadPlan(repo, map[string]string{"IMAGE": "busybox"}); err != nil {
		t.Fatalf("sandbox env not read: %v", err)
	}
}

// COMPOSE_PROFILES in the .env the workspace gets turns services on, on
// the host as in the plan.
func TestPlanFollowsComposeProfiles(t *testing.T) {
	repo := repoWith(t, "services:\n  web:\n    image: busybox\n  debug:\n    image: busybox\n    profiles: [debug]\n", map[string]string{".env": "COMPOSE_PROFILES=debug\n"})
	plan, err := loadPlan(repo, nil)
	if err != nil || !reflect.DeepEqual(plan.Services, []string{"debug", "web"}) {
		t.Fatalf("repo .env: %v %v", plan.Services, err)
	}
	plan, err = loadPlan(repo, map[string]string{"OTHER": "x"})
	if err != nil || !reflect.DeepEqual(plan.Services, []string{"web"}) {
		t.Fatalf("sandbox env without COMPOSE_PROFILES: %v %v", plan.Services, err)
	}
}
