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
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/vmattach"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

func profile(t *testing.T, name string) *catalog.Profile {
	c, _ := catalog.Builtin()
	p, err := c.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func write(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func content(dir, rel string) string {
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		return "<missing>"
	}
	return string(b)
}

func secondSSHHost(t *testing.T) *hosts.Host {
	tr, err := hosts.NewSSH(testharness.SSHConfig(t, "harness2", true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return &hosts.Host{Transport: tr, RootDir: t.TempDir()}
}

func TestCheckpointTutorialOnComposeOverSSH(t *testing.T) {
	testharness.RequireDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	h := testharness.SSHHost(t)
	reg := backends.NewRegistry(composessh.New(os.Getenv("SANDBOXER_COMPOSE_CMD")), vmattach.New())
	repo := testharness.ComposeRepo(t, testharness.Image(t), "web")
	sb, err := reg.Create(ctx, backends.Request{ID: backends.NewID(), Profile: profile(t, "profile.compose-e2e"), Host: h,
		Inputs: map[string]string{"repo": repo}, Env: map[string]string{"TOKEN": "one"}})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Destroy(context.Background(), h, sb.ID)
	ws := sb.WorkspaceDir
	write(t, ws, "app/state.txt", "good state\n")
	write(t, ws, "app/debug.log", "log noise\n")

	snap, err := reg.Snapshot(ctx, h, backends.SnapshotRequest{ID: "snap-" + sb.ID, SandboxID: sb.ID, Name: "good",
		Filter: checkpoint.Filter{Exclude: []string{"**/*.log"}}, IncludeEnv: true, Quiesce: backends.QuiescePause})
	if err != nil {
		t.Fatal(err)
	}
	if snap.FileCount != 3 || snap.EnvNames[0] != "TOKEN" { // docker-compose.yml, README.txt, app/state.txt
		t.Fatalf("snapshot %+v", snap)
	}
	if _, st, _ := reg.Get(ctx, h, sb.ID); st.State != backends.StatusReady {
		t.Fatalf("source not ready after a paused snapshot: %+v", st)
	}

	// Break things, then restore in place.
	write(t, ws, "app/state.txt", "broken")
	os.Remove(filepath.Join(ws, "README.txt"))
	write(t, ws, "app/junk.txt", "junk")
	write(t, ws, ".env", "TOKEN=two\n")
	res, err := reg.RestoreInPlace(ctx, h, snap.ID, h, sb.ID, checkpoint.RestoreOptions{Files: true, Env: true, Overwrite: true, Prune: true})
	if err != nil {
		t.Fatal(err)
	}
	if content(ws, "app/state.txt") != "good state\n" || content(ws, "README.txt") != "fixture\n" || content(ws, "app/junk.txt") != "<missing>" {
		t.Fatalf("workspace not restored: %+v", res)
	}
	if content(ws, "app/debug.log") != "log noise\n" || content(ws, ".env") != "TOKEN=one\n" {
		t.Fatal("out-of-scope file touched or env not restored")
	}
	if _, st, _ := reg.Get(ctx, h, sb.ID); st.State != backends.StatusReady {
		t.Fatalf("target not ready after an in-place restore: %+v", st)
	}

	// Restore into a new sandbox on another host; the source keeps running.
	h2 := secondSSHHost(t)
	nsb, nres, err := reg.RestoreNew(ctx, h, snap.ID, backends.Request{ID: backends.NewID(), Profile: profile(t, "profile.workspace"), Host: h2})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Destroy(context.Background(), h2, nsb.ID)
	if nres.FilesRestored != 3 || content(nsb.WorkspaceDir, "app/state.txt") != "good state\n" || content(nsb.WorkspaceDir, ".env") != "TOKEN=one\n" {
		t.Fatalf("new sandbox not populated: %+v", nres)
	}
	if _, st, _ := reg.Get(ctx, h, sb.ID); st.State != backends.StatusReady {
		t.Fatal("the source sandbox was disturbed")
	}

	// A copy on the other host restores the same content; diff of a
	// snapshot with itself is empty.
	cp, err := reg.Agent.Copy(ctx, h, snap.ID, h2, "copy-"+sb.ID, "replica", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if cp.Digest != snap.Digest {
		t.Fatalf("copy digest %s != %s", cp.Digest, snap.Digest)
	}
	d, err := reg.Agent.Diff(ctx, h2, cp.ID, cp.ID)
	if err != nil || len(d.FilesAdded)+len(d.FilesModified)+len(d.FilesRemoved) != 0 {
		t.Fatalf("self diff %+v %v", d, err)
	}
	if err := reg.Agent.Delete(ctx, h, snap.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Agent.Get(ctx, h, snap.ID); err != checkpoint.ErrNotFound {
		t.Fatalf("deleted snapshot: %v", err)
	}
}

func TestPauseIsUndoneWhenCaptureFails(t *testing.T) {
	testharness.RequireDocker(t)
	ctx := context.Background()
	h := testharness.SSHHost(t)
	reg := backends.NewRegistry(composessh.New(os.Getenv("SANDBOXER_COMPOSE_CMD")))
	repo := testharness.ComposeRepo(t, testharness.Image(t), "app")
	sb, err := reg.Create(ctx, backends.Request{ID: backends.NewID(), Profile: profile(t, "profile.compose-e2e"), Host: h, Inputs: map[string]string{"repo": repo}})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Destroy(ctx, h, sb.ID)
	_, err = reg.Snapshot(ctx, h, backends.SnapshotRequest{ID: "s1", SandboxID: sb.ID, Quiesce: backends.QuiescePause, Limits: checkpoint.Limits{MaxFiles: 1}})
	if err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Fatalf("want a limit error, got %v", err)
	}
	out, _ := exec.Command("docker", "ps", "--filter", "label=com.docker.compose.project="+sb.ComposeProject, "--format", "{{.Status}}").Output()
	if strings.Contains(string(out), "Paused") || !strings.Contains(string(out), "Up") {
		t.Fatalf("services left paused after a failed capture: %q", out)
	}
}
