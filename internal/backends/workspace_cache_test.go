package backends_test

import (
	"context"
	"runtime"
	"testing"
	"weak"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// The cache of resolved workspace bases keeps no host alive: a host no
// configuration holds any more (a provider configured again, a test step
// over) is collected, and its connection with it.
func TestResolvedBasesKeepNoHost(t *testing.T) {
	root := t.TempDir()
	w := func() weak.Pointer[hosts.Host] {
		h := &hosts.Host{Transport: &hosts.Local{Name: "gone"}, RootDir: root, Local: true}
		if _, err := backends.WorkspaceDir(context.Background(), h, root, "x"); err != nil {
			t.Fatal(err)
		}
		return weak.Make(h)
	}()
	for range 3 {
		runtime.GC()
	}
	if w.Value() != nil {
		t.Fatal("a host no one holds is kept alive by the workspace cache")
	}
	// A later resolution, for another host, still works (and prunes).
	h := &hosts.Host{Transport: &hosts.Local{Name: "next"}, RootDir: root, Local: true}
	if _, err := backends.WorkspaceDir(context.Background(), h, root, "y"); err != nil {
		t.Fatal(err)
	}
}
