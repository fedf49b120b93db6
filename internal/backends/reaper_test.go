package backends_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/composessh"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// The reaper tears down an expired compose sandbox — containers, networks,
// workspace, record — with no provider involved, and leaves alone what has
// no expiry and what it did not create.
func TestReaperRemovesOnlyExpiredSandboxes(t *testing.T) {
	testharness.RequireDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h := testharness.SSHHost(t)
	h.Reaper = true
	reg := backends.NewRegistry(composessh.New(""))
	repo := testharness.ComposeRepo(t, testharness.Image(t), "app")
	foreign := filepath.Join(h.RootDir, "someone-elses")
	os.MkdirAll(foreign, 0o755)

	expiring, err := reg.Create(ctx, backends.Request{ID: backends.NewID(), Profile: profile(t, "profile.compose-e2e"), Host: h,
		Inputs: map[string]string{"repo": repo}, TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	keeper, err := reg.Create(ctx, backends.Request{ID: backends.NewID(), Profile: profile(t, "profile.compose-e2e"), Host: h,
		Inputs: map[string]string{"repo": repo}})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Destroy(context.Background(), h, keeper.ID)
	time.Sleep(1500 * time.Millisecond)

	reaped, err := backends.RunReaper(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(reaped, ",") != expiring.ID {
		t.Fatalf("reaped %v, want only %s", reaped, expiring.ID)
	}
	out, _ := exec.Command("docker", "ps", "-aq", "--filter", "label=com.docker.compose.project="+expiring.ComposeProject).Output()
	nets, _ := exec.Command("docker", "network", "ls", "-q", "--filter", "label=com.docker.compose.project="+expiring.ComposeProject).Output()
	if len(strings.TrimSpace(string(out)+string(nets))) > 0 {
		t.Fatalf("containers or networks of the reaped sandbox remain: %s %s", out, nets)
	}
	if _, err := os.Stat(expiring.WorkspaceDir); !os.IsNotExist(err) {
		t.Fatal("the reaped workspace remains")
	}
	if _, _, err := reg.Get(ctx, h, expiring.ID); err != backends.ErrNotFound {
		t.Fatalf("the reaped record remains: %v", err)
	}
	if _, st, err := reg.Get(ctx, h, keeper.ID); err != nil || st.State != backends.StatusReady {
		t.Fatalf("a sandbox without expiry was disturbed: %+v %v", st, err)
	}
	if _, err := os.Stat(foreign); err != nil {
		t.Fatal("the reaper removed a directory it did not create")
	}
	// Running it again does nothing.
	if again, err := backends.RunReaper(ctx, h); err != nil || len(again) != 0 {
		t.Fatalf("second run: %v %v", again, err)
	}
}
