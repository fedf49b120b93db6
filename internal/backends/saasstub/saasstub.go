// Package saasstub is ext.saas-stub: a metered stand-in for a SaaS sandbox
// service, with no external API. Its sandboxes are real enough to use — a
// workspace on the machine running Terraform — and are charged through the
// registry's credits ledger (see backends.Metering).
package saasstub

import (
	"context"
	"fmt"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
)

// Name is the extension's catalog name.
const Name = "ext.saas-stub"

// Extension implements backends.Extension (and, like the service it stands
// in for, not backends.Snapshotter) with the directory-workspace mechanics.
type Extension struct {
	backends.DirWorkspace
}

var _ backends.Extension = (*Extension)(nil)

// New returns the extension.
func New() *Extension { return &Extension{backends.DirWorkspace{Ext: Name}} }

// Prepare puts the sandbox's workspace on the machine running Terraform,
// the only place a stand-in for a SaaS service can put it.
func (e *Extension) Prepare(ctx context.Context, req backends.Request) (*backends.Sandbox, []backends.Step, error) {
	if !req.Host.Local {
		return nil, nil, fmt.Errorf("%s sandboxes live on the local host, not on %q", Name, req.Host.Host())
	}
	return e.DirWorkspace.Prepare(ctx, req)
}
