package composessh_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/composessh"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// A container engine that does not answer (stopped, restarting) lists
// nothing, which is not the same as holding nothing: teardown then fails
// and leaves the workspace (the record with it, in the registry), so a
// retry still knows what to remove. Found by the dockerd-restart fault
// test, where a create's cleanup ran while the engine restarted and
// removed workspace and record, leaving the stack's containers, network and
// volume behind unrecorded. A fake docker on PATH stands in for the engine.
func TestTeardownKeepsTheWorkspaceWhenTheEngineDoesNotAnswer(t *testing.T) {
	bin := t.TempDir()
	fake := func(script string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(bin, "docker"), []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	h := &hosts.Host{Transport: &hosts.Local{Name: "local"}, RootDir: t.TempDir(), Local: true}
	root, err := filepath.EvalSymlinks(h.RootDir)
	if err != nil {
		t.Fatal(err)
	}
	id := backends.NewID()
	sb := &backends.Sandbox{ID: id, Extension: composessh.Name, WorkspaceDir: filepath.Join(root, id),
		ComposeProject: composessh.ProjectName(id), ComposeFile: "docker-compose.yml"}
	if err := os.MkdirAll(sb.WorkspaceDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sb.WorkspaceDir, "docker-compose.yml"), []byte("services: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ext := composessh.New("docker compose")

	fake(`echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?" >&2; exit 1`)
	err = ext.Teardown(t.Context(), h, sb)
	if err == nil || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("teardown against an engine that does not answer: %v, want a failure saying so", err)
	}
	if _, err := os.Stat(sb.WorkspaceDir); err != nil {
		t.Fatalf("the workspace was removed although the engine was never asked: %v", err)
	}

	// The engine answers again, with nothing of the project: teardown
	// completes.
	fake(`exit 0`)
	if err := ext.Teardown(t.Context(), h, sb); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sb.WorkspaceDir); !os.IsNotExist(err) {
		t.Fatalf("the workspace remains after a teardown that succeeded: %v", err)
	}
}
