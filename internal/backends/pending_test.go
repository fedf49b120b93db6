package backends_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// A create's record and workspace wait for the first step that takes
// them (Step.RunWith), which runs them first in its own command: nothing
// is on the host before that command, all of it is after it. A part that
// fails is named; a workspace found existing is left alone; a step with
// Run finds the work done.
func TestCreateRunsWhatIsPendingInTheFirstStepsCommand(t *testing.T) {
	for _, c := range []struct {
		name          string
		plant         string // made before the create, relative to the root
		runFirst      bool   // a step with Run before the one that takes the work
		wantErr       string
		wantWorkspace bool
	}{
		{name: "taken by the step", wantWorkspace: true},
		{name: "done before a step with Run", runFirst: true, wantWorkspace: true},
		{name: "the record cannot be written", plant: ".sandboxer/sandboxes", wantErr: "writing the record of sandbox ID"},
		{name: "someone else's directory", plant: "sbx-ID/theirs", wantErr: backends.ErrWorkspaceExists.Error(), wantWorkspace: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, id := testharness.LocalHost(t), backends.NewID()
			repo := t.TempDir()
			if err := os.WriteFile(filepath.Join(repo, "compose.yaml"), []byte("services: {}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			record := filepath.Join(h.RootDir, ".sandboxer", "sandboxes", id+".json")
			ws := filepath.Join(h.RootDir, backends.DirWorkspaceName(id))
			plant(t, h.RootDir, c.plant, id)
			var before, after []bool
			var steps []backends.Step
			if c.runFirst {
				steps = append(steps, backends.Step{Name: "look", Run: func(context.Context) error {
					before = []bool{exists(record), exists(ws)}
					return nil
				}})
			}
			steps = append(steps, backends.Step{Name: "up", RunWith: func(ctx context.Context, pending *backends.Pending) error {
				if !c.runFirst {
					before = []bool{exists(record), exists(ws)}
				}
				var outcome func(hosts.Reply, error) error
				reply, err := hosts.AskPrivately(ctx, h, "the step's command", func(m hosts.Mark) string {
					var script string
					script, outcome = pending.Take(m)
					return script + "test -f " + hosts.Quote(filepath.Join(ws, "compose.yaml"))
				})
				if err = outcome(reply, err); err != nil {
					return err
				}
				if !pending.Empty() {
					t.Error("the work is still pending after the command that took it")
				}
				after = []bool{exists(record), exists(ws)}
				return nil
			}})
			ext := &stepsExtension{DirWorkspace: backends.DirWorkspace{Ext: "ext.steps"}, steps: steps}
			_, err := backends.NewRegistry(ext).Create(t.Context(), backends.Request{ID: id, Host: h,
				Profile: &catalog.Profile{Name: "p", Extension: "ext.steps"}, Inputs: map[string]string{"repo": repo}})
			wantErr := strings.ReplaceAll(c.wantErr, "ID", id)
			switch {
			case wantErr == "" && err != nil:
				t.Fatalf("create: %v", err)
			case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
				t.Fatalf("create: %v; want an error saying %q", err, wantErr)
			}
			if c.wantErr == "" {
				if want := []bool{c.runFirst, c.runFirst}; len(before) != 2 || before[0] != want[0] || before[1] != want[1] {
					t.Errorf("before the step's command: record and workspace %v, want %v", before, want)
				}
				if len(after) != 2 || !after[0] || !after[1] {
					t.Errorf("after it: record and workspace %v, want both", after)
				}
			}
			if exists(ws) != c.wantWorkspace {
				t.Errorf("after the create: workspace %v, want %v", exists(ws), c.wantWorkspace)
			}
			if c.plant == "sbx-ID/theirs" && !exists(filepath.Join(ws, "theirs")) {
				t.Error("the existing directory was touched")
			}
		})
	}
}
