package backends_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/composessh"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// abandonedCreateEnv makes this test binary, run as a child process, start
// a create that cannot finish (see runAbandonedCreate).
const abandonedCreateEnv = "SANDBOXER_TEST_ABANDONED_CREATE"

// runAbandonedCreate, in the child process: a compose sandbox whose one
// service never becomes healthy, created on the local host under the root
// directory given in the environment, with a create deadline 8 seconds
// away. The parent kills this process while the create waits.
func runAbandonedCreate() {
	root, repo, id := os.Getenv(abandonedCreateEnv), os.Getenv(abandonedCreateEnv+"_REPO"), os.Getenv(abandonedCreateEnv+"_ID")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	cat, err := catalog.Load("")
	if err != nil {
		os.Exit(3)
	}
	p, err := cat.Get("profile.compose-e2e")
	if err != nil {
		os.Exit(3)
	}
	reg := backends.NewRegistry(composessh.New(os.Getenv("SANDBOXER_COMPOSE_CMD")))
	h := &hosts.Host{Transport: &hosts.Local{Name: "local"}, RootDir: root, Local: true}
	_, _ = reg.Create(ctx, backends.Request{ID: id, Profile: p, Host: h, Inputs: map[string]string{"repo": repo}})
	os.Exit(0)
}

// A create abandoned outright (its process killed while the stack comes
// up) leaves a record with its deadline; once the deadline has passed the
// inventory lists the sandbox as stale and the reaper removes everything
// of it: containers, networks, workspace, network reservation, record.
func TestAbandonedCreateIsStaleThenReaped(t *testing.T) {
	testharness.RequireDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root := t.TempDir()
	h := &hosts.Host{Transport: &hosts.Local{Name: "local"}, RootDir: root, Local: true}
	repo := t.TempDir()
	compose := "services:\n  app:\n    image: " + testharness.Image(t) + "\n" +
		"    command: [\"sh\", \"-c\", \"trap 'exit 0' TERM; while true; do sleep 1; done\"]\n" +
		"    healthcheck:\n      test: [\"CMD\", \"false\"]\n      interval: 1s\n      retries: 1000\n"
	if err := os.WriteFile(filepath.Join(repo, "docker-compose.yml"), []byte(compose), 0o600); err != nil {
		t.Fatal(err)
	}
	id := backends.NewID()
	project := composessh.ProjectName(id)
	t.Cleanup(func() {
		_ = exec.Command("sh", "-c", "docker rm -f $(docker ps -aq --filter label=com.docker.compose.project="+project+") 2>/dev/null; "+
			"docker network rm $(docker network ls -q --filter label=com.docker.compose.project="+project+") 2>/dev/null").Run()
	})

	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), abandonedCreateEnv+"="+root, abandonedCreateEnv+"_REPO="+repo, abandonedCreateEnv+"_ID="+id)
	child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its compose commands die with it
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	// Killed once its containers exist: the create is waiting for a
	// readiness that never comes.
	record := filepath.Join(root, ".sandboxer", "sandboxes", id+".json")
	waitFor(t, 60*time.Second, "the child's containers", func() bool {
		out, _ := exec.Command("docker", "ps", "-q", "--filter", "label=com.docker.compose.project="+project).Output()
		_, err := os.Stat(record)
		return err == nil && len(strings.TrimSpace(string(out))) > 0
	})
	if err := syscall.Kill(-child.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()

	var rec backends.Sandbox
	raw, err := os.ReadFile(record)
	if err == nil {
		err = json.Unmarshal(raw, &rec)
	}
	if err != nil || rec.ReadyAt != nil || rec.CreateDeadline == nil {
		t.Fatalf("the abandoned create's record: %s %v", raw, err)
	}
	reg := backends.NewRegistry(composessh.New(os.Getenv("SANDBOXER_COMPOSE_CMD")))
	stale := func() bool {
		list, err := reg.Sandboxes(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range list {
			if s.Sandbox.ID == id {
				return s.Stale
			}
		}
		t.Fatal("the inventory does not list the abandoned sandbox")
		return false
	}
	if time.Now().Before(*rec.CreateDeadline) && stale() {
		t.Fatal("a create still within its deadline is listed stale")
	}
	waitFor(t, 30*time.Second, "the create deadline to pass", stale)

	if err := backends.InstallReaper(ctx, h); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = backends.UninstallReaper(context.Background(), h) })
	reaped, err := backends.RunReaper(ctx, h)
	if err != nil || strings.Join(reaped, ",") != id {
		t.Fatalf("reaper removed %v (%v), want %s", reaped, err, id)
	}
	for _, kind := range []string{"ps -aq", "network ls -q", "volume ls -q"} {
		out, err := exec.Command("sh", "-c", "docker "+kind+" --filter label=com.docker.compose.project="+project).Output()
		if err != nil || len(strings.TrimSpace(string(out))) > 0 {
			t.Errorf("docker %s after the reaper: %q %v", kind, out, err)
		}
	}
	for _, p := range []string{filepath.Join(root, id), record, filepath.Join(root, ".sandboxer", "networks", id+".yml")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s remains after the reaper", p)
		}
	}
}

// waitFor polls cond, an observable condition, until it holds or timeout
// passes (a failure naming what was awaited).
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
