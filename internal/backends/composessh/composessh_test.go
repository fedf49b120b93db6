package composessh_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/composessh"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

func profile(t *testing.T) *catalog.Profile {
	c, err := catalog.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Get("profile.compose-e2e")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return c
}

// leftovers asks the docker engine (not the provider) what remains of a project.
func leftovers(t *testing.T, project string) string {
	t.Helper()
	return strings.Join(testharness.ComposeLeftovers(t, project), " ")
}

func TestComposeLifecycleOverSSH(t *testing.T) {
	testharness.RequireDocker(t)
	h := testharness.SSHHost(t)
	reg := backends.NewRegistry(composessh.New(os.Getenv("SANDBOXER_COMPOSE_CMD")))
	repo := testharness.ComposeRepo(t, testharness.Image(t), "web", "worker")
	evil := `$(touch /tmp/sandboxer-pwned); echo "x" | cat; rm -rf ~`
	if err := os.Remove("/tmp/sandboxer-pwned"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err) // a marker left behind would fail the check below
	}

	sb, err := reg.Create(ctx(t), backends.Request{
		ID: backends.NewID(), Profile: profile(t), Host: h,
		Inputs: map[string]string{"repo": repo},
		Env:    map[string]string{"TOKEN": "s3cret", "ODD": evil},
		Labels: map[string]string{"team": evil},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/tmp/sandboxer-pwned"); err == nil {
		t.Fatal("shell metacharacters in a label or env value were executed")
	}
	if sb.ReadyAt == nil || sb.ComposeProject != "sbx-"+sb.ID || !strings.HasPrefix(sb.WorkspaceDir, "/") {
		t.Fatalf("unexpected record: %+v", sb)
	}
	if got, _ := os.ReadFile(filepath.Join(sb.WorkspaceDir, "README.txt")); string(got) != "fixture\n" {
		t.Fatalf("repo not copied: %q", got)
	}
	envFile, err := os.ReadFile(filepath.Join(sb.WorkspaceDir, ".env"))
	if err != nil || !strings.Contains(string(envFile), "TOKEN=s3cret\n") {
		t.Fatalf(".env not written: %q %v", envFile, err)
	}
	if st, _ := os.Stat(filepath.Join(sb.WorkspaceDir, ".env")); st.Mode().Perm() != 0o600 {
		t.Fatalf(".env mode %v, want 0600", st.Mode().Perm())
	}

	got, st, err := reg.Get(ctx(t), h, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != backends.StatusReady || len(st.Services) != 2 || got.Labels["team"] != evil {
		t.Fatalf("status %+v, record %+v", st, got)
	}
	if rec, _ := os.ReadFile(filepath.Join(h.RootDir, ".sandboxer", "sandboxes", sb.ID+".json")); strings.Contains(string(rec), "s3cret") {
		t.Fatal("the host record holds a secret env value")
	}

	// Stopped out of band: Inspect must say so.
	// By label: compose v1 names it <project>_worker_1, v2 <project>-worker-1.
	stop := `docker stop -t 1 $(docker ps -q --filter label=com.docker.compose.project=` + sb.ComposeProject + ` --filter label=com.docker.compose.service=worker)`
	if out, err := exec.Command("sh", "-c", stop).CombinedOutput(); err != nil {
		t.Fatalf("docker stop: %v %s", err, out)
	}
	if _, st, _ = reg.Get(ctx(t), h, sb.ID); st.State != backends.StatusDegraded {
		t.Fatalf("after stopping one service: %+v", st)
	}

	if err := reg.Destroy(ctx(t), h, sb.ID); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(t, sb.ComposeProject); left != "" {
		t.Fatalf("teardown left: %s", left)
	}
	if _, err := os.Stat(sb.WorkspaceDir); !os.IsNotExist(err) {
		t.Fatalf("workspace remains: %v", err)
	}
	if _, _, err := reg.Get(ctx(t), h, sb.ID); err != backends.ErrNotFound {
		t.Fatalf("Get after destroy: %v", err)
	}
	// Idempotent: destroying again is success.
	if err := reg.Destroy(ctx(t), h, sb.ID); err != nil {
		t.Fatal(err)
	}
}

func TestValidateRejectsBadRepoInput(t *testing.T) {
	ext := composessh.New(os.Getenv("SANDBOXER_COMPOSE_CMD"))
	p := profile(t)
	empty := t.TempDir()
	cases := map[string]map[string]string{
		"no compose file":       {"repo": empty},
		"missing directory":     {"repo": filepath.Join(empty, "nope")},
		"parent step in repo":   {"repo": empty + "/../x"},
		"compose_file escapes":  {"repo": empty, "compose_file": "../compose.yaml"},
		"compose_file absolute": {"repo": empty, "compose_file": "/etc/compose.yaml"},
	}
	for name, inputs := range cases {
		if err := ext.Validate(p, inputs); err == nil {
			t.Errorf("%s: Validate accepted %v", name, inputs)
		}
	}
}

// Before the compose command is known, the host status script lists each
// engine the host has, and fails (so that every sandbox is inspected by
// itself, which detects compose and says why) when an engine's listing
// fails or there is no engine at all. Plain sh, engines as small scripts
// on an otherwise empty PATH: this tests the script's own logic.
func TestHostStatusScriptWithoutDetection(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	script, err := composessh.New("").HostStatusScript(t.Context(), &hosts.Host{Transport: &hosts.Local{}})
	if err != nil {
		t.Fatal(err)
	}
	run := func(engines map[string]string) (string, error) {
		bin := t.TempDir()
		for name, body := range engines {
			if err := os.WriteFile(filepath.Join(bin, name), []byte("#!"+sh+"\n"+body+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command(sh, "-c", script)
		cmd.Env = []string{"PATH=" + bin}
		out, err := cmd.Output()
		return string(out), err
	}
	if out, err := run(map[string]string{"docker": `echo "sbx-a|web|running|Up 1 second"`}); err != nil || out != "sbx-a|web|running|Up 1 second\n" {
		t.Errorf("docker only: %q, %v", out, err)
	}
	out, err := run(map[string]string{"docker": `echo "sbx-a|web|running|Up"`, "podman": `echo "sbx-b|db|exited|Exited (0)"`})
	if err != nil || !strings.Contains(out, "sbx-a|web") || !strings.Contains(out, "sbx-b|db") {
		t.Errorf("both engines: %q, %v", out, err)
	}
	if out, err := run(map[string]string{"podman": `echo "sbx-b|db|running|Up"`}); err != nil || out != "sbx-b|db|running|Up\n" {
		t.Errorf("podman only: %q, %v", out, err)
	}
	if _, err := run(map[string]string{"docker": `echo "Cannot connect to the Docker daemon" >&2; exit 1`}); err == nil {
		t.Error("an engine that cannot list: the script succeeded")
	}
	if _, err := run(nil); err == nil {
		t.Error("no engine: the script succeeded")
	}
	// Once the compose command is known, only its engine is asked.
	known, err := composessh.New("podman-compose").HostStatusScript(t.Context(), &hosts.Host{Transport: &hosts.Local{}})
	if err != nil || !strings.HasPrefix(known, "podman ps ") {
		t.Errorf("with podman-compose configured: %q, %v", known, err)
	}
}
