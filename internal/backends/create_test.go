package backends_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// stepsExtension is a directory sandbox with steps of its own, and a
// teardown that fails while teardownErr is set.
type stepsExtension struct {
	backends.DirWorkspace
	steps       []backends.Step
	teardownErr error
}

func (e *stepsExtension) Prepare(ctx context.Context, req backends.Request) (*backends.Sandbox, []backends.Step, error) {
	sb, _, err := e.DirWorkspace.Prepare(ctx, req)
	return sb, e.steps, err
}

func (e *stepsExtension) Teardown(ctx context.Context, h *hosts.Host, sb *backends.Sandbox) error {
	if e.teardownErr != nil {
		return e.teardownErr
	}
	return e.DirWorkspace.Teardown(ctx, h, sb)
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// plant makes an empty file at rel below root (ID in it replaced by id),
// before a create: what the create must not overwrite.
func plant(t *testing.T, root, rel, id string) {
	t.Helper()
	if rel == "" {
		return
	}
	p := filepath.Join(root, strings.ReplaceAll(rel, "ID", id))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// The rules of every create, whatever its extension: the record is written
// before anything is made, and a create that cannot write it makes
// nothing; a workspace directory that exists already is someone else's and
// is left alone; a failing step is torn down with the record; a teardown
// that fails too keeps the record, naming what remains, and says so.
func TestCreateRecordsFirstAndCleansUp(t *testing.T) {
	failing := backends.Step{Name: "fail", Run: func(context.Context) error { return errors.New("the step failed") }}
	for _, c := range []struct {
		name             string
		plant            string // a file made before the create, relative to the root
		teardownErr      error
		wantErr          string
		wantCleanupError bool
		wantRecord       bool
		wantWorkspace    bool
	}{
		{name: "no record, nothing made", plant: ".sandboxer/sandboxes", wantErr: "cannot create directory"},
		{name: "someone else's directory", plant: "sbx-ID/theirs", wantErr: backends.ErrWorkspaceExists.Error(), wantWorkspace: true},
		{name: "a failing step", wantErr: "the step failed"},
		{name: "a failing cleanup", teardownErr: errors.New("the engine did not answer"), wantCleanupError: true,
			wantErr:    "the step failed\n\ncleanup after the failure also failed: sandbox ID may remain on host \"local\": the engine did not answer",
			wantRecord: true, wantWorkspace: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, id := testharness.LocalHost(t), backends.NewID()
			record := filepath.Join(h.RootDir, ".sandboxer", "sandboxes", id+".json")
			ws := filepath.Join(h.RootDir, backends.DirWorkspaceName(id))
			plant(t, h.RootDir, c.plant, id)
			var seen []bool
			ext := &stepsExtension{DirWorkspace: backends.DirWorkspace{Ext: "ext.steps"}, teardownErr: c.teardownErr, steps: []backends.Step{
				{Name: "look", Run: func(context.Context) error { seen = append(seen, exists(record), exists(ws)); return nil }},
				failing,
				{Name: "never", Run: func(context.Context) error { t.Error("a step after the failing one ran"); return nil }},
			}}
			_, err := backends.NewRegistry(ext).Create(t.Context(), backends.Request{ID: id, Host: h,
				Profile: &catalog.Profile{Name: "p", Extension: "ext.steps"}})
			if err == nil || !strings.Contains(err.Error(), strings.ReplaceAll(c.wantErr, "ID", id)) || errors.Is(err, backends.ErrCleanupFailed) != c.wantCleanupError {
				t.Fatalf("create: %v; want an error saying %q, ErrCleanupFailed %v", err, c.wantErr, c.wantCleanupError)
			}
			if c.plant == "" && (len(seen) != 2 || !seen[0] || !seen[1]) {
				t.Errorf("the first step saw record and workspace %v, want both there", seen)
			}
			if c.plant != "" && seen != nil {
				t.Error("the steps ran")
			}
			if exists(record) != c.wantRecord || exists(ws) != c.wantWorkspace {
				t.Errorf("after the create: record %v, workspace %v; want %v, %v", exists(record), exists(ws), c.wantRecord, c.wantWorkspace)
			}
			if c.plant == "sbx-ID/theirs" && !exists(filepath.Join(ws, "theirs")) {
				t.Error("the existing directory was touched")
			}
		})
	}
}

// A restored workspace's compose file is found among the default names, or
// is the one named, and resolved in the same command; a missing or
// unresolvable file is an error naming what was looked for. Here the
// files are scripts, and resolving one runs it; without resolve
// (findOnly), a file is only found.
func TestRestoredComposeFile(t *testing.T) {
	files := map[string]string{"compose.yml": "echo default", "docker-compose.yml": "echo later", "stack/prod.yml": "exit 3"}
	for _, c := range []struct {
		name, only, want, wantErr string
		findOnly                  bool
	}{
		{name: "", want: "compose.yml: default\n"},
		{name: "stack/prod.yml", findOnly: true, want: "stack/prod.yml: "},
		{name: "", only: "docker-compose.yml", want: "docker-compose.yml: later\n"},
		{name: "stack/prod.yml", wantErr: "compose file stack/prod.yml is not valid"},
		{name: "prod.yml", wantErr: "no compose file in the restored workspace (looked for prod.yml)"},
		{name: "", only: "README", wantErr: "(looked for compose.yaml, compose.yml, docker-compose.yml, docker-compose.yaml)"},
		{name: "../compose.yaml", wantErr: "input compose_file"},
	} {
		h := testharness.LocalHost(t)
		for f, script := range files {
			if c.only == "" || f == c.only {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(h.RootDir, f)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(h.RootDir, f), []byte(script), 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}
		resolve := func(f string) string { return "sh " + hosts.Quote(h.RootDir+"/"+f) }
		if c.findOnly {
			resolve = nil
		}
		sb := &backends.Sandbox{WorkspaceDir: h.RootDir}
		out, err := backends.RestoredComposeFile(t.Context(), h, sb, c.name, resolve)
		if got := sb.ComposeFile + ": " + string(out); c.wantErr == "" && (err != nil || got != c.want) {
			t.Errorf("%q among %q: %q, %v; want %q", c.name, c.only, got, err, c.want)
		}
		if c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%q among %q: %v, want an error saying %q", c.name, c.only, err, c.wantErr)
		}
	}
}

// A restore's volumes are filled beside the steps that need only the
// workspace's files (Step.WhileFilling), and are filled before any other
// step starts; what the fill leaves running is waited for before the
// create returns, and a failure there fails it; a step that fails waits
// for the fill, whose error is reported with its own, before the teardown;
// a fill that fails fails the create and is torn down.
func TestCreateFillsVolumesBesideTheStepsThatMay(t *testing.T) {
	for _, c := range []struct {
		name       string
		failRender bool
		failFill   bool
		failSettle bool
		wantErr    []string
	}{
		{name: "all works"},
		{name: "the step beside the fill fails", failRender: true, failFill: true, wantErr: []string{"the rendering failed", "the fill failed"}},
		{name: "the fill fails", failFill: true, wantErr: []string{"the fill failed"}},
		{name: "what the fill left fails", failSettle: true, wantErr: []string{"a helper failed after its answer"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			h, id := testharness.LocalHost(t), backends.NewID()
			ws := filepath.Join(h.RootDir, backends.DirWorkspaceName(id))
			rendered, filled, settled := make(chan struct{}), false, false
			ext := &stepsExtension{DirWorkspace: backends.DirWorkspace{Ext: "ext.steps"}, steps: []backends.Step{
				{Name: "render", WhileFilling: true, Run: func(context.Context) error {
					close(rendered)
					if c.failRender {
						return errors.New("the rendering failed")
					}
					return nil
				}},
				{Name: "up", Run: func(context.Context) error {
					if !filled {
						t.Error("a step that needs the volumes ran before they were filled")
					}
					return nil
				}},
			}}
			_, err := backends.NewRegistry(ext).Create(ctx, backends.Request{ID: id, Host: h,
				Profile: &catalog.Profile{Name: "p", Extension: "ext.steps"},
				Fill:    func(context.Context, *backends.Sandbox) error { return nil },
				FillVolumes: func(ctx context.Context, _ *backends.Sandbox) (func() error, error) {
					select { // the step beside it runs meanwhile, or this waits forever
					case <-rendered:
					case <-ctx.Done():
						return nil, errors.New("the step that may run beside the fill did not")
					}
					if c.failFill {
						return nil, errors.New("the fill failed")
					}
					filled = true
					return func() error {
						settled = true
						if c.failSettle {
							return errors.New("a helper failed after its answer")
						}
						return nil
					}, nil
				},
			})
			if len(c.wantErr) == 0 && err != nil {
				t.Fatal(err)
			}
			for _, want := range c.wantErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("create: %v; want an error saying %q", err, want)
				}
			}
			if filled && !settled {
				t.Error("the create returned before what the fill left running had ended")
			}
			if exists(ws) != (err == nil) {
				t.Errorf("after the create (error %v) the workspace exists: %v", err, exists(ws))
			}
		})
	}
}
