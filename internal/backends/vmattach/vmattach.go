// Package vmattach is ext.vm-packer in attach mode: a sandbox is an isolated
// workspace directory on an existing machine (a pre-built VM reached over
// SSH, or this machine). Teardown removes the workspace, never the machine.
package vmattach

import (
	"context"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// Name is the extension's catalog name.
const Name = "ext.vm-packer"

// Extension implements backends.Extension with the directory-workspace
// mechanics every directory sandbox shares.
type Extension struct {
	backends.DirWorkspace
}

var _ backends.Extension = (*Extension)(nil)

// New returns the extension.
func New() *Extension { return &Extension{backends.DirWorkspace{Ext: Name}} }

// A workspace has no processes of its own to hold still: snapshots and
// restores read and write it directly.
var _ backends.Snapshotter = (*Extension)(nil)

func (e *Extension) Pause(context.Context, *hosts.Host, *backends.Sandbox) error   { return nil }
func (e *Extension) Unpause(context.Context, *hosts.Host, *backends.Sandbox) error { return nil }
func (e *Extension) Stop(context.Context, *hosts.Host, *backends.Sandbox) error    { return nil }
func (e *Extension) Start(context.Context, *hosts.Host, *backends.Sandbox) error   { return nil }
