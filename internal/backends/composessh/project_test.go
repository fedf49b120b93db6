package composessh

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/composefile"
)

// These run with no harness: plan-time compose rules read the client's copy only.

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
		{"unknown key", "services:\n  web:\n    image: busybox\n    imagee: x\n", nil, 0, "imagee"},
		{"unknown dependency", "services:\n  web:\n    image: busybox\n    depends_on: [db]\n", nil, 0, "db"},
		{"container_name", "services:\n  web:\n    image: busybox\n  db:\n    image: busybox\n    container_name: shared-db\n", nil, 6, "container_name"},
		{"build outside repo", "services:\n  web:\n    build: ../elsewhere\n", nil, 3, "outside the repo"},
		{"build from git", "services:\n  web:\n    build: https://example.invalid/app.git\n", nil, 3, "copied repo only"},
		{"missing Dockerfile", "services:\n  web:\n    build: ./app\n", map[string]string{"app/main.sh": "echo"}, 3, "Dockerfile"},
		{"no service", "services:\n  debug:\n    image: busybox\n    profiles: [debug]\n", nil, 0, "no service"},
		{"required variable", "services:\n  web:\n    image: ${IMAGE:?set IMAGE}\n", nil, 0, "IMAGE"},
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

func TestPlanInvalidYAMLHasLine(t *testing.T) {
	repo := repoWith(t, "services:\n  web:\n    image: busybox\n  worker:\n\timage: busybox\n", nil)
	_, err := loadPlan(repo, nil)
	var fe *composefile.FileError
	if !errors.As(err, &fe) || fe.Line != 5 {
		t.Fatalf("err = %v, want line 5", err)
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
  db:
    image: busybox
    volumes: [pgdata:/var/lib/postgresql/data, cache:/cache, uploads:/uploads]
volumes:
  pgdata:
    external: true
  cache:
    name: shared-cache
  uploads: {}
networks:
  shared:
    external: true
`, map[string]string{"data/keep": ""})
	plan, err := loadPlan(repo, nil)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(plan.Warnings, "\n")
	for _, want := range []string{"host port 8080", "line 4", "/var/run/docker.sock", `volume "pgdata" is external`, `network "shared" is external`,
		`volume "cache" is named "shared-cache"`, "checkpoints do not capture it"} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings do not mention %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "9090") || strings.Contains(all, "/data from") || strings.Contains(all, "uploads") {
		t.Errorf("warned about what is isolated:\n%s", all)
	}
	if len(plan.Warnings) != 5 {
		t.Errorf("%d warnings, want 5:\n%s", len(plan.Warnings), all)
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
