package backends_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/agent"
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
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
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
	defer func() { _ = reg.Destroy(context.Background(), h, sb.ID) }() // best-effort cleanup
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
	if err := os.Remove(filepath.Join(ws, "README.txt")); err != nil {
		t.Fatal(err)
	}
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
	tr2, err := hosts.NewSSH(testharness.SSHConfig(t, "harness2", true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr2.Close() })
	h2 := &hosts.Host{Transport: tr2, RootDir: t.TempDir()}
	nsb, nres, err := reg.RestoreNew(ctx, h, snap.ID, backends.Request{ID: backends.NewID(), Profile: profile(t, "profile.workspace"), Host: h2})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reg.Destroy(context.Background(), h2, nsb.ID) }() // best-effort cleanup
	if nres.FilesRestored != 3 || content(nsb.WorkspaceDir, "app/state.txt") != "good state\n" || content(nsb.WorkspaceDir, ".env") != "TOKEN=one\n" {
		t.Fatalf("new sandbox not populated: %+v", nres)
	}
	if _, st, _ := reg.Get(ctx, h, sb.ID); st.State != backends.StatusReady {
		t.Fatal("the source sandbox was disturbed")
	}

	// A copy on the other host restores the same content; diff of a
	// snapshot with itself is empty.
	cp, err := reg.CopySnapshot(ctx, h, snap.ID, h2, "copy-"+sb.ID, "replica")
	if err != nil {
		t.Fatal(err)
	}
	if cp.Digest != snap.Digest {
		t.Fatalf("copy digest %s != %s", cp.Digest, snap.Digest)
	}
	d, err := reg.DiffSnapshots(ctx, h2, cp.ID, cp.ID)
	if err != nil || len(d.FilesAdded)+len(d.FilesModified)+len(d.FilesRemoved) != 0 {
		t.Fatalf("self diff %+v %v", d, err)
	}
	if err := reg.DeleteSnapshot(ctx, h, snap.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.GetSnapshot(ctx, h, snap.ID); err != checkpoint.ErrNotFound {
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
	defer func() { _ = reg.Destroy(ctx, h, sb.ID) }() // best-effort cleanup
	_, err = reg.Snapshot(ctx, h, backends.SnapshotRequest{ID: "s1", SandboxID: sb.ID, Quiesce: backends.QuiescePause, Profile: &catalog.Profile{Snapshots: catalog.SnapshotSettings{MaxFiles: 1}}})
	if err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Fatalf("want a limit error, got %v", err)
	}
	out, _ := exec.Command("docker", "ps", "--filter", "label=com.docker.compose.project="+sb.ComposeProject, "--format", "{{.Status}}").Output()
	if strings.Contains(string(out), "Paused") || !strings.Contains(string(out), "Up") {
		t.Fatalf("services left paused after a failed capture: %q", out)
	}
}

// treeOf lists everything under root with its mode, size and mtime: two
// equal listings mean nothing was created, removed or written (a file
// added or removed also changes its directory's mtime).
func treeOf(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v %d %d\n", p, info.Mode(), info.Size(), info.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// What a plan runs for snapshots (the resource's Read, the snapshot and
// diff data sources, finding a snapshot's host: reg.GetSnapshot, ListSnapshots, DiffSnapshots)
// changes nothing on the host, before any snapshot and after captures, and
// does not trust a manifest changed on the host.
func TestSnapshotReadsChangeNothingOnTheHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h := testharness.SSHHost(t)
	agentDir := h.Path(".sandboxer", "bin")
	unchanged := func(t *testing.T, before string) {
		t.Helper()
		if after := treeOf(t, h.RootDir); after != before {
			t.Fatalf("reads changed the host:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		if _, err := os.Stat(agentDir); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("reads installed an agent: %v", err)
		}
	}

	// A fresh root dir: no store is no snapshots, and stays no store.
	reg := backends.NewRegistry(vmattach.New())
	before := treeOf(t, h.RootDir)
	if _, err := reg.GetSnapshot(ctx, h, "snap-1"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("get on a fresh host: want not found, got %v", err)
	}
	if list, err := reg.ListSnapshots(ctx, h); err != nil || len(list) != 0 {
		t.Fatalf("list on a fresh host: %v, %v", list, err)
	}
	if _, err := reg.DiffSnapshots(ctx, h, "snap-1", "snap-2"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("diff on a fresh host: want not found, got %v", err)
	}
	unchanged(t, before)

	// Two captures (through the agent, which they install).
	sb, err := reg.Create(ctx, backends.Request{ID: backends.NewID(), Profile: profile(t, "profile.workspace"), Host: h})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reg.Destroy(context.Background(), h, sb.ID) }() // best-effort cleanup
	write(t, sb.WorkspaceDir, "app/state.txt", "one\n")
	s1, err := reg.Snapshot(ctx, h, backends.SnapshotRequest{ID: "snap-1", SandboxID: sb.ID, Name: "one"})
	if err != nil {
		t.Fatal(err)
	}
	write(t, sb.WorkspaceDir, "app/state.txt", "two\n")
	write(t, sb.WorkspaceDir, "app/new.txt", "new\n")
	s2, err := reg.Snapshot(ctx, h, backends.SnapshotRequest{ID: "snap-2", SandboxID: sb.ID, Name: "two"})
	if err != nil {
		t.Fatal(err)
	}

	// Reads by a provider that has not installed anything, on a host whose
	// agent is gone: they cannot be going through it.
	if err := os.RemoveAll(agentDir); err != nil {
		t.Fatal(err)
	}
	reg = backends.NewRegistry(vmattach.New())
	before = treeOf(t, h.RootDir)
	if got, err := reg.GetSnapshot(ctx, h, "snap-1"); err != nil || got.Digest != s1.Digest || got.Name != "one" {
		t.Fatalf("get: %+v, %v", got, err)
	}
	if list, err := reg.ListSnapshots(ctx, h); err != nil || len(list) != 2 || list[0].ID != s1.ID || list[1].ID != s2.ID {
		t.Fatalf("list: %+v, %v", list, err)
	}
	d, err := reg.DiffSnapshots(ctx, h, "snap-1", "snap-2")
	if err != nil || strings.Join(d.FilesAdded, ",") != "app/new.txt" || strings.Join(d.FilesModified, ",") != "app/state.txt" ||
		len(d.FilesRemoved) != 0 || d.SizeChangeBytes != 4 {
		t.Fatalf("diff: %+v, %v", d, err)
	}
	unchanged(t, before)

	// A manifest changed on the host (one size, its digest left as it
	// was; written as plain JSON, which older stores hold): refused, never
	// reported as the snapshot.
	manifest := filepath.Join(agent.StoreDir(h), checkpoint.SnapshotsDir, checkpoint.ManifestFile("snap-1"))
	data, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	m, err := checkpoint.ParseManifest("snap-1", data)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(m.Entries, func(e checkpoint.Entry) bool { return e.Path == "app/state.txt" })
	if i < 0 || m.Entries[i].Size != 4 { // "one\n"
		t.Fatalf("no entry app/state.txt of size 4 in %+v", m.Entries)
	}
	m.Entries[i].Size = 5
	if data, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(manifest, data, 0o600); err != nil {
		t.Fatal(err)
	}
	before = treeOf(t, h.RootDir)
	for op, read := range map[string]func() error{
		"get":  func() error { _, err := reg.GetSnapshot(ctx, h, "snap-1"); return err },
		"list": func() error { _, err := reg.ListSnapshots(ctx, h); return err },
		"diff": func() error { _, err := reg.DiffSnapshots(ctx, h, "snap-1", "snap-2"); return err },
	} {
		if err := read(); err == nil || !strings.Contains(err.Error(), "snapshot snap-1: manifest is corrupt") {
			t.Fatalf("%s of a tampered manifest: want it refused as corrupt, got %v", op, err)
		}
	}
	unchanged(t, before)
}

// A sandbox stopped on purpose is checkpointed without a pause (nothing
// runs to hold still), and an in-place restore leaves it stopped.
func TestStoppedSandboxCheckpoints(t *testing.T) {
	testharness.RequireDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h := testharness.SSHHost(t)
	reg := backends.NewRegistry(composessh.New(os.Getenv("SANDBOXER_COMPOSE_CMD")))
	repo := testharness.ComposeRepo(t, testharness.Image(t), "app")
	sb, err := reg.Create(ctx, backends.Request{ID: backends.NewID(), Profile: profile(t, "profile.compose-e2e"), Host: h, Inputs: map[string]string{"repo": repo}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reg.Destroy(context.Background(), h, sb.ID) }() // best-effort cleanup
	if st, err := reg.SetDesiredState(ctx, h, sb, backends.DesiredStopped); err != nil || st.State != backends.StatusStopped {
		t.Fatalf("stop: %+v %v", st, err)
	}
	states := func() string {
		out, err := exec.Command("docker", "ps", "-a", "--filter", "label=com.docker.compose.project="+sb.ComposeProject, "--format", "{{.State}}").Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	snap, err := reg.Snapshot(ctx, h, backends.SnapshotRequest{ID: "snap-" + backends.NewID(), SandboxID: sb.ID, Quiesce: backends.QuiescePause})
	if err != nil {
		t.Fatalf("a checkpoint of a stopped sandbox: %v", err)
	}
	if got := states(); got != "exited" {
		t.Fatalf("after the checkpoint the containers are %q, want exited", got)
	}
	readme := filepath.Join(sb.WorkspaceDir, "README.txt")
	if err := os.WriteFile(readme, []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.RestoreInPlace(ctx, h, snap.ID, h, sb.ID, checkpoint.RestoreOptions{Files: true, Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(readme); string(got) != "fixture\n" {
		t.Fatalf("restored README.txt holds %q", got)
	}
	if got := states(); got != "exited" {
		t.Fatalf("after the restore the containers are %q, want exited: the sandbox is meant to be stopped", got)
	}
}
