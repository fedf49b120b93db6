package backends_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/vmattach"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// A new workspace whose directory exists already is someone else's: the
// create fails, and neither that directory nor anything in it is touched;
// no record is left behind.
func TestCreateNeverTakesAnExistingDirectory(t *testing.T) {
	ctx := context.Background()
	h := testharness.LocalHost(t)
	reg := backends.NewRegistry(vmattach.New())
	id := backends.NewID()
	theirs := filepath.Join(h.RootDir, backends.DirWorkspaceName(id))
	if err := os.MkdirAll(theirs, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(theirs, "keep.txt"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := reg.Create(ctx, backends.Request{ID: id, Profile: profile(t, "profile.workspace"), Host: h})
	if !errors.Is(err, backends.ErrWorkspaceExists) {
		t.Fatalf("create over an existing directory: %v, want ErrWorkspaceExists", err)
	}
	if data, err := os.ReadFile(filepath.Join(theirs, "keep.txt")); err != nil || string(data) != "mine" {
		t.Fatalf("the existing directory was touched: %q %v", data, err)
	}
	if _, err := os.Stat(filepath.Join(h.RootDir, ".sandboxer", "sandboxes", id+".json")); !os.IsNotExist(err) {
		t.Fatalf("a record remains after the failed create: %v", err)
	}
}
