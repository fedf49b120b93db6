package vmattach_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/vmattach"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

func workspaceProfile(t *testing.T) *catalog.Profile {
	c, err := catalog.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Get("profile.workspace")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWorkspaceLifecycle(t *testing.T) {
	for name, host := range map[string]func(testing.TB) *hosts.Host{"local": testharness.LocalHost, "ssh": testharness.SSHHost} {
		t.Run(name, func(t *testing.T) {
			h := host(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			// Something of the machine's own that teardown must leave alone.
			keep := filepath.Join(h.RootDir, "operator-notes.txt")
			if err := os.WriteFile(keep, []byte("mine"), 0o644); err != nil {
				t.Fatal(err)
			}
			repo := t.TempDir()
			if err := os.WriteFile(filepath.Join(repo, "build.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}

			reg := backends.NewRegistry(vmattach.New())
			sb, err := reg.Create(ctx, backends.Request{
				ID: backends.NewID(), Profile: workspaceProfile(t), Host: h,
				Inputs: map[string]string{"repo": repo}, Env: map[string]string{"K": "v"},
			})
			if err != nil {
				t.Fatal(err)
			}
			if filepath.Base(sb.WorkspaceDir) != "sbx-"+sb.ID {
				t.Fatalf("workspace %s is not named sbx-<id>", sb.WorkspaceDir)
			}
			if st, err := os.Stat(filepath.Join(sb.WorkspaceDir, "build.sh")); err != nil || st.Mode().Perm() != 0o755 {
				t.Fatalf("repo not copied with its modes: %v %v", st, err)
			}
			if _, st, err := reg.Get(ctx, h, sb.ID); err != nil || st.State != backends.StatusReady {
				t.Fatalf("Get: %+v %v", st, err)
			}
			if err := os.RemoveAll(sb.WorkspaceDir); err != nil {
				t.Fatal(err)
			}
			if _, st, _ := reg.Get(ctx, h, sb.ID); st.State != backends.StatusMissing {
				t.Fatalf("workspace removed out of band, status %q", st.State)
			}
			if err := reg.Destroy(ctx, h, sb.ID); err != nil {
				t.Fatal(err)
			}
			if got, err := os.ReadFile(keep); err != nil || string(got) != "mine" {
				t.Fatal("teardown touched a file it did not create")
			}
		})
	}
}

func TestWorkspaceBaseFromProfile(t *testing.T) {
	h := testharness.LocalHost(t)
	base := filepath.Join(t.TempDir(), "build")
	p := *workspaceProfile(t)
	p.Settings = map[string]string{"workspace_base": base}
	reg := backends.NewRegistry(vmattach.New())
	ctx := context.Background()
	sb, err := reg.Create(ctx, backends.Request{ID: backends.NewID(), Profile: &p, Host: h})
	if err != nil {
		t.Fatal(err)
	}
	if sb.WorkspaceDir != filepath.Join(base, "sbx-"+sb.ID) {
		t.Fatalf("workspace %s, want under %s", sb.WorkspaceDir, base)
	}
	if err := reg.Destroy(ctx, h, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(base); err != nil {
		t.Fatal("teardown removed the base directory, not only the workspace")
	}
}

func TestTeardownRefusesForeignPath(t *testing.T) {
	h := testharness.LocalHost(t)
	victim := t.TempDir()
	err := vmattach.New().Teardown(context.Background(), h, &backends.Sandbox{ID: "abc", WorkspaceDir: victim})
	if err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("teardown of a path not named sbx-<id>: %v", err)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatal("the foreign directory was removed")
	}
}
