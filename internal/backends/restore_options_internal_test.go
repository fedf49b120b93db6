package backends

import (
	"testing"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
)

// A restore into a sandbox with services starts its files' writeback as it
// writes them (the containers' creation waits for the disk); a workspace's
// leaves its data to the kernel. The caller's other options pass unchanged.
func TestRestoreOptionsWritebackFollowsServices(t *testing.T) {
	asked := checkpoint.RestoreOptions{Files: true, Env: true, Overwrite: true, Prune: true}
	compose := restoreOptions(&Sandbox{ComposeProject: "sbx-abc"}, asked)
	if !compose.Writeback {
		t.Error("a compose sandbox's restore does not start writeback")
	}
	workspace := restoreOptions(&Sandbox{}, asked)
	if workspace.Writeback {
		t.Error("a workspace's restore starts writeback")
	}
	compose.Writeback, workspace.Writeback = false, false
	if compose != asked || workspace != asked {
		t.Errorf("options changed beyond writeback: %+v, %+v, asked %+v", compose, workspace, asked)
	}
}
