package backends

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

func TestWorkspaceRule(t *testing.T) {
	const root, id = "/srv/sbx", "abc123"
	for _, c := range []struct {
		ws       string
		vmPacker bool
		ok       bool
	}{
		{"/srv/sbx/abc123", false, true},
		{"/srv/sbx/sbx-abc123", true, true},
		{"/srv/sbx/nested/abc123", false, true},
		{"/build/sbx-abc123", true, true}, // a profile's workspace_base
		{"/build/sbx-abc123", false, false},
		{"/build/abc123", true, false},
		{"/tmp/abc123", false, false},
		{"/", false, false},
		{"/", true, false},
		{"/srv/sbx", false, false},
		{"/srv", true, false},
		{"/home", false, false},
		{"/srv/sbx/other", false, false},
		{"/srv/sbx/../abc123", false, false},
		{"/srv/sbx/./abc123", false, false},
		{"/srv/sbx//abc123", false, false},
		{"srv/sbx/abc123", false, false},
		{"/srv/sbx/.sandboxer/abc123", false, false},
		{"/srv/sbx/.sandboxer/sbx-abc123", true, false},
		{"/srv/sbx-2/abc123", false, false}, // a sibling root sharing the prefix
	} {
		err := workspaceAllowed(c.ws, root, id, c.vmPacker)
		if (err == nil) != c.ok {
			t.Errorf("workspace %q (vm-packer %v): allowed %v, want %v (%v)", c.ws, c.vmPacker, err == nil, c.ok, err)
		}
	}
	// The root itself, when its name is that of a workspace.
	if err := workspaceAllowed("/srv/sbx-abc123", "/srv/sbx-abc123", id, true); err == nil {
		t.Error("a vm-packer workspace equal to the root directory was allowed")
	}
	if err := workspaceAllowed("/srv/sbx-abc123", "/srv/sbx-abc123/inner", id, true); err == nil {
		t.Error("a vm-packer workspace holding the root directory was allowed")
	}
}

func TestRecordIDMustBeItsFileName(t *testing.T) {
	for _, c := range []struct{ file, id string }{{"abc", "abcd"}, {"abc", ""}, {"ABC", "ABC"}, {"../x", "../x"}} {
		if err := checkRecord(&Sandbox{ID: c.id}, c.file, "/srv/sbx"); err == nil {
			t.Errorf("record %s.json with id %q was accepted", c.file, c.id)
		}
	}
	if err := checkRecord(&Sandbox{ID: "abc"}, "abc", "/srv/sbx"); err != nil {
		t.Errorf("a record without workspace: %v", err)
	}
}

// spyExtension tears down like the directory extensions do, and notes that
// it was asked to.
type spyExtension struct {
	name      string
	teardowns int
}

func (e *spyExtension) Name() string                                       { return e.name }
func (e *spyExtension) Validate(*catalog.Profile, map[string]string) error { return nil }
func (e *spyExtension) Prepare(context.Context, Request) (*Sandbox, []Step, error) {
	return nil, nil, nil
}
func (e *spyExtension) WaitReady(context.Context, *hosts.Host, *Sandbox) (Status, error) {
	return Status{State: StatusReady}, nil
}
func (e *spyExtension) Inspect(context.Context, *hosts.Host, *Sandbox) (Status, error) {
	return Status{State: StatusReady}, nil
}
func (e *spyExtension) Teardown(ctx context.Context, h *hosts.Host, sb *Sandbox) error {
	e.teardowns++
	name := sb.ID
	if e.name == vmPackerExtension {
		name = "sbx-" + sb.ID
	}
	return RemoveWorkspace(ctx, h, sb.WorkspaceDir, name)
}

// canary is a directory dir/name holding a file, standing for something
// that is no sandbox's; it reports whether it survived.
func canary(t *testing.T, dir, name string) (string, func() bool) {
	t.Helper()
	d := filepath.Join(dir, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(d, "canary")
	if err := os.WriteFile(f, []byte("alive"), 0o644); err != nil {
		t.Fatal(err)
	}
	return d, func() bool { _, err := os.Stat(f); return err == nil }
}

// PlantRecord writes the record file <root>/.sandboxer/sandboxes/<file>.json
// of a local root directory, as writeRecord writes sb (or data, when not
// nil), and returns its path.
func PlantRecord(t *testing.T, root, file string, sb Sandbox, data []byte) string {
	t.Helper()
	if data == nil {
		var err error
		if data, err = json.MarshalIndent(sb, "", "  "); err != nil {
			t.Fatal(err)
		}
		data = append(data, '\n')
	}
	p := filepath.Join(root, ".sandboxer", "sandboxes", file+".json")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A record is acted on only when it is trustworthy: Get and Destroy of a
// tampered one fail naming the record file, and nothing is torn down or
// removed — not the directory it points at, not the record itself.
func TestTamperedRecordsAreRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h := testharness.SSHHost(t)
	root, err := filepath.EvalSymlinks(h.RootDir)
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	compose, vm := &spyExtension{name: "ext.compose-ssh"}, &spyExtension{name: vmPackerExtension}
	reg := NewRegistry(compose, vm)

	other := NewID()
	otherWS, otherAlive := canary(t, root, other)
	none := func() bool { return true }
	for _, c := range []struct {
		name string
		ext  string
		ws   func(id string) (string, func() bool)
		// id, when set, is the id the record claims instead of its file's.
		id string
	}{
		{name: "id is not the file name", ext: "ext.compose-ssh", ws: func(string) (string, func() bool) { return otherWS, otherAlive }, id: other},
		{name: "workspace outside the root", ext: "ext.compose-ssh", ws: func(id string) (string, func() bool) { return canary(t, outside, id) }},
		{name: "sbx- workspace outside the root, not vm-packer", ext: "ext.compose-ssh", ws: func(id string) (string, func() bool) { return canary(t, outside, "sbx-"+id) }},
		{name: "vm-packer workspace outside the root not named sbx-", ext: vmPackerExtension, ws: func(id string) (string, func() bool) { return canary(t, outside, id) }},
		{name: "workspace is /", ext: vmPackerExtension, ws: func(string) (string, func() bool) { return "/", none }},
		{name: "workspace is the root", ext: "ext.compose-ssh", ws: func(string) (string, func() bool) { return root, otherAlive }},
		{name: "workspace climbs out", ext: "ext.compose-ssh", ws: func(id string) (string, func() bool) {
			_, alive := canary(t, outside, id)
			return root + "/../" + filepath.Base(outside) + "/" + id, alive
		}},
		{name: "workspace is in .sandboxer", ext: "ext.compose-ssh", ws: func(id string) (string, func() bool) { return canary(t, root, ".sandboxer/"+id) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := NewID()
			ws, alive := c.ws(id)
			claimed := id
			if c.id != "" {
				claimed = c.id
			}
			rec := PlantRecord(t, h.RootDir, id, Sandbox{ID: claimed, Extension: c.ext, WorkspaceDir: ws}, nil)
			before := compose.teardowns + vm.teardowns
			if _, _, err := reg.Get(ctx, h, id); err == nil || !strings.Contains(err.Error(), rec) {
				t.Fatalf("Get of a tampered record: %v, want an error naming %s", err, rec)
			}
			if err := reg.Destroy(ctx, h, id); err == nil || !strings.Contains(err.Error(), rec) {
				t.Fatalf("Destroy of a tampered record: %v, want an error naming %s", err, rec)
			}
			if compose.teardowns+vm.teardowns != before {
				t.Fatal("a tampered record was torn down")
			}
			if _, err := os.Stat(rec); err != nil {
				t.Fatal("the tampered record was removed")
			}
			if !alive() {
				t.Fatalf("%s was removed", ws)
			}
		})
	}
	if !otherAlive() {
		t.Fatal("another sandbox's workspace was removed")
	}

	// A trustworthy record is torn down as before.
	id := NewID()
	ws, alive := canary(t, root, id)
	PlantRecord(t, h.RootDir, id, Sandbox{ID: id, Extension: "ext.compose-ssh", WorkspaceDir: ws}, nil)
	if err := reg.Destroy(ctx, h, id); err != nil || alive() {
		t.Fatalf("destroy of a sound record: %v, workspace left %v", err, alive())
	}
}

// The root directory resolves on the host, so a relative root_dir (relative
// to the SSH user's home) is compared in the same form as the workspaces.
func TestRecordsUnderARelativeRoot(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h := testharness.SSHHost(t)
	out, err := hosts.Output(ctx, h, "pwd -P")
	if err != nil {
		t.Fatal(err)
	}
	home := strings.TrimSpace(string(out))
	// Relative to the home directory, climbing out of it if need be.
	rel, err := filepath.Rel(home, h.RootDir)
	if err != nil {
		t.Fatal(err)
	}
	h.RootDir = rel
	reg := NewRegistry(&spyExtension{name: "ext.compose-ssh"})
	id := NewID()
	ws, err := WorkspaceDir(ctx, h, h.RootDir, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeRecord(ctx, h, &Sandbox{ID: id, Extension: "ext.compose-ssh", WorkspaceDir: ws}); err != nil {
		t.Fatal(err)
	}
	if err := makeWorkspace(ctx, Request{ID: id, Host: h}, &Sandbox{ID: id, WorkspaceDir: ws}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := reg.Get(ctx, h, id); err != nil {
		t.Fatal(err)
	}
	if err := reg.Destroy(ctx, h, id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ws); !os.IsNotExist(err) {
		t.Fatal("the workspace remains")
	}
}

// RemoveWorkspace itself refuses what lies outside the root, and the host
// re-checks: a symlink inside the root aiming at another directory passes
// the path check, but not the resolved one, so rm -rf never follows it.
func TestRemoveWorkspaceStaysInTheRoot(t *testing.T) {
	ctx := context.Background()
	h := testharness.LocalHost(t)
	root, err := filepath.EvalSymlinks(h.RootDir)
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	id := NewID()
	_, alive := canary(t, outside, id)
	_, sbxAlive := canary(t, outside, "sbx-"+id)
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	_, dotAlive := canary(t, root, ".sandboxer/"+id)
	for _, c := range []struct{ ws, name string }{
		{"/home", "home"},
		{outside + "/" + id, id},
		{root + "/link/" + id, id},
		{root + "/link/sbx-" + id, "sbx-" + id},
		{root + "/../" + filepath.Base(outside) + "/" + id, id},
		{root + "/.sandboxer/" + id, id},
		{root, filepath.Base(root)},
		{"/", "/"},
	} {
		if err := RemoveWorkspace(ctx, h, c.ws, c.name); err == nil || !strings.Contains(err.Error(), "refusing") {
			t.Errorf("RemoveWorkspace(%s, %s): %v, want a refusal", c.ws, c.name, err)
		}
	}
	if !alive() || !sbxAlive() || !dotAlive() {
		t.Fatal("a directory outside any workspace was removed")
	}
	ws, wsAlive := canary(t, root, id)
	if err := RemoveWorkspace(ctx, h, ws, id); err != nil || wsAlive() {
		t.Fatalf("removing a real workspace: %v (left: %v)", err, wsAlive())
	}
	if err := RemoveWorkspace(ctx, h, ws, id); err != nil {
		t.Fatalf("removing it again: %v", err)
	}
}

// The installer fills the one placeholder, the assignment of the default
// root, with a quoted word: a second @ROOT@ (in a comment, say) would take
// the replacement instead.
func TestReaperScriptHasOnePlaceholder(t *testing.T) {
	if n := strings.Count(reaperScript, "@ROOT@"); n != 1 || !strings.Contains(reaperScript, "\ndefault_root=@ROOT@\n") {
		t.Fatalf("reaper.sh has %d @ROOT@, want exactly one, as default_root=@ROOT@ on its own line", n)
	}
}

// A root directory no crontab line can hold is refused, not installed.
func TestReaperRefusesRootsCronCannotHold(t *testing.T) {
	for _, name := range []string{"a%b", "a\nb"} {
		h := testharness.LocalHost(t)
		h.RootDir = filepath.Join(h.RootDir, name)
		if err := InstallReaper(context.Background(), h); err == nil {
			t.Errorf("root directory %q: the reaper was installed", h.RootDir)
		}
		if _, err := os.Stat(filepath.Join(h.RootDir, ".sandboxer", "bin", "reaper.sh")); err == nil {
			t.Errorf("root directory %q: the reaper script was written", h.RootDir)
		}
	}
}
