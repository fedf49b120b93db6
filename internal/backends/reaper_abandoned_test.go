package backends_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/vmattach"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// The rule for abandoned creates, on records as the provider writes them
// and as older versions wrote them (no create_deadline), checked on both
// sides: the inventory's stale flag and what the real reaper script removes
// from a real root directory. Stale means the reaper removes it; a create
// still within its deadline, a ready sandbox and an older record without a
// deadline are left alone. No docker: ext.vm-packer workspaces.
func TestAbandonedCreatesInInventoryAndReaper(t *testing.T) {
	ctx := t.Context()
	h := &hosts.Host{Transport: &hosts.Local{Name: "local"}, RootDir: t.TempDir(), Local: true}
	root, err := filepath.EvalSymlinks(h.RootDir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	past, future := now.Add(-time.Hour), now.Add(time.Hour)
	at := func(t time.Time) *time.Time { return &t }

	type sandbox struct {
		name   string
		sb     backends.Sandbox
		raw    string // a record as an older version wrote it, instead of sb
		noDir  bool   // killed before its workspace was made
		reaped string // the reaper's reason, "" when it must stay
	}
	cases := []*sandbox{
		{name: "abandoned", sb: backends.Sandbox{CreateDeadline: at(past)}, reaped: "abandoned create"},
		{name: "abandoned before its workspace was made", sb: backends.Sandbox{CreateDeadline: at(past)}, noDir: true, reaped: "abandoned create"},
		{name: "abandoned, its ttl not yet over", sb: backends.Sandbox{CreateDeadline: at(past), ExpiresAt: at(future)}, reaped: "abandoned create"},
		{name: "never ready, expired before its deadline", sb: backends.Sandbox{CreateDeadline: at(future), ExpiresAt: at(past)}, reaped: "expired"},
		{name: "still being created", sb: backends.Sandbox{CreateDeadline: at(future)}},
		{name: "ready, a deadline left in its record", sb: backends.Sandbox{ReadyAt: at(past), CreateDeadline: at(past)}},
		{name: "ready, expired", sb: backends.Sandbox{ReadyAt: at(past), ExpiresAt: at(past)}, reaped: "expired"},
		{name: "older version, not ready, no deadline", raw: `{
  "id": "@ID@",
  "host": "local",
  "profile": "profile.workspace",
  "extension": "ext.vm-packer",
  "workspace_dir": "@WS@",
  "created_at": "2024-01-02T03:04:05Z"
}
`},
		{name: "older version, expired", raw: `{
  "id": "@ID@",
  "host": "local",
  "profile": "profile.workspace",
  "extension": "ext.vm-packer",
  "workspace_dir": "@WS@",
  "created_at": "2024-01-02T03:04:05Z",
  "ready_at": "2024-01-02T03:04:06Z",
  "expires_at": "2024-01-02T04:04:05Z",
  "ttl": "1h"
}
`, reaped: "expired"},
	}
	ids := map[string]*sandbox{}
	for _, c := range cases {
		id := backends.NewID()
		ids[id] = c
		c.sb.ID, c.sb.Host, c.sb.Profile, c.sb.Extension = id, "local", "profile.workspace", "ext.vm-packer"
		c.sb.WorkspaceDir, c.sb.CreatedAt = filepath.Join(root, backends.DirWorkspaceName(id)), past
		var raw []byte
		if c.raw != "" {
			raw = []byte(strings.NewReplacer("@ID@", id, "@WS@", c.sb.WorkspaceDir).Replace(c.raw))
		}
		backends.PlantRecord(t, root, id, c.sb, raw)
		// What a record write cut off midway leaves (hosts.Upload).
		backends.PlantRecord(t, root, id+".json.tmp.0123abcd/"+id, c.sb, raw)
		if !c.noDir {
			if err := os.MkdirAll(filepath.Join(c.sb.WorkspaceDir, "work"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}

	// The inventory: stale exactly where the reaper will act, or where
	// the workspace is gone (half-dead, listed but not the reaper's).
	list, err := backends.NewRegistry(vmattach.New()).Sandboxes(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != len(cases) {
		t.Fatalf("the inventory lists %d sandboxes, want %d", len(list), len(cases))
	}
	for _, info := range list {
		c := ids[info.Sandbox.ID]
		if want := c.reaped != "" || c.noDir; info.Stale != want {
			t.Errorf("%s: stale = %v, want %v (status %s)", c.name, info.Stale, want, info.Status.State)
		}
	}

	// The reaper, as installed for this root, run as cron runs it.
	out, err := exec.CommandContext(ctx, "sh", reaperFor(t, root)).CombinedOutput()
	if err != nil {
		t.Fatalf("the reaper failed: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for id, c := range ids {
		i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "reaped "+id+" ") })
		_, recErr := os.Stat(filepath.Join(root, ".sandboxer", "sandboxes", id+".json"))
		_, wsErr := os.Stat(c.sb.WorkspaceDir)
		_, tmpErr := os.Stat(filepath.Join(root, ".sandboxer", "sandboxes", id+".json.tmp.0123abcd"))
		switch {
		case c.reaped == "" && (i >= 0 || recErr != nil || (!c.noDir && wsErr != nil)):
			t.Errorf("%s: the reaper removed it (%v, record: %v, workspace: %v)", c.name, out, recErr, wsErr)
		case c.reaped != "" && (i < 0 || !strings.Contains(lines[i], "("+c.reaped)):
			t.Errorf("%s: want it reaped as %q; the reaper said:\n%s", c.name, c.reaped, out)
		case c.reaped != "" && (!os.IsNotExist(recErr) || !os.IsNotExist(wsErr) || !os.IsNotExist(tmpErr)):
			t.Errorf("%s: reaped, yet its record (%v), workspace (%v) or an interrupted write of its record (%v) remains", c.name, recErr, wsErr, tmpErr)
		}
	}

	// What the reaper left, the inventory no longer calls stale.
	if list, err = backends.NewRegistry(vmattach.New()).Sandboxes(ctx, h); err != nil {
		t.Fatal(err)
	}
	for _, info := range list {
		if c := ids[info.Sandbox.ID]; info.Stale {
			t.Errorf("%s: still stale after the reaper ran", c.name)
		}
	}
}

// reaperFor writes the reaper script as InstallReaper installs it for root
// (without a crontab line) and returns its path.
func reaperFor(t *testing.T, root string) string {
	t.Helper()
	src, err := os.ReadFile("reaper.sh")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "reaper.sh")
	if err := os.WriteFile(script, []byte(strings.Replace(string(src), "@ROOT@", hosts.Quote(root), 1)), 0o700); err != nil {
		t.Fatal(err)
	}
	return script
}

// A container engine that does not answer lists nothing, which is not the
// same as holding nothing: the reaper keeps an expired compose sandbox's
// workspace and record until the engine answers, then reaps it. A fake
// docker on PATH stands in for the engine.
func TestReaperWaitsForAnEngineThatDoesNotAnswer(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	fake := func(script string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(bin, "docker"), []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	id, past := backends.NewID(), time.Now().Add(-time.Hour).UTC()
	sb := backends.Sandbox{ID: id, Profile: "profile.compose-e2e", Extension: "ext.compose-ssh", WorkspaceDir: filepath.Join(root, id),
		ComposeProject: "sbx-" + id, ComposeFile: "docker-compose.yml", CreatedAt: past, CreateDeadline: &past}
	rec := backends.PlantRecord(t, root, id, sb, nil)
	if err := os.MkdirAll(sb.WorkspaceDir, 0o755); err != nil {
		t.Fatal(err)
	}
	script := reaperFor(t, root)
	run := func() string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), "sh", script)
		cmd.Env = append(os.Environ(), "PATH="+bin+":/usr/bin:/bin")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the reaper failed: %v\n%s", err, out)
		}
		return string(out)
	}

	fake(`echo "Cannot connect to the Docker daemon. Is the docker daemon running?" >&2; exit 1`)
	if out := run(); !strings.Contains(out, "skipped "+id) || strings.Contains(out, "reaped") {
		t.Fatalf("the reaper, docker not answering, said:\n%s", out)
	}
	for _, p := range []string{rec, sb.WorkspaceDir} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s was removed while docker did not answer: %v", p, err)
		}
	}

	fake(`exit 0`) // answers: nothing of the project
	if out := run(); !strings.Contains(out, "reaped "+id+" (abandoned create") {
		t.Fatalf("the reaper, docker answering, said:\n%s", out)
	}
	for _, p := range []string{rec, sb.WorkspaceDir} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("%s remains after the reaper: %v", p, err)
		}
	}
}
