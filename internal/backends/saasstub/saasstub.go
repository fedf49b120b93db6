// Package saasstub is ext.saas-stub: a metered stand-in for a SaaS sandbox
// service, with no external API. Its sandboxes are real enough to use — a
// workspace on the machine running Terraform — and are charged through the
// registry's credits ledger (see backends.Metering).
package saasstub

import (
	"context"
	"fmt"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/vmattach"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// Name is the extension's catalog name.
const Name = "ext.saas-stub"

// Extension implements backends.Extension (and, like the service it stands
// in for, not backends.Snapshotter).
type Extension struct {
	ws *vmattach.Extension // the workspace mechanics
}

var _ backends.Extension = (*Extension)(nil)

// New returns the extension.
func New() *Extension { return &Extension{ws: vmattach.New()} }

func (e *Extension) Name() string { return Name }

func (e *Extension) Validate(p *catalog.Profile, inputs map[string]string) error {
	return e.ws.Validate(p, inputs)
}

func (e *Extension) Provision(ctx context.Context, req backends.Request) (*backends.Sandbox, error) {
	if !req.Host.Local {
		return nil, fmt.Errorf("%s sandboxes live on the local host, not on %q", Name, req.Host.Host())
	}
	sb, err := e.ws.Provision(ctx, req)
	if sb != nil {
		sb.Extension = Name
	}
	return sb, err
}

func (e *Extension) WaitReady(ctx context.Context, h *hosts.Host, sb *backends.Sandbox) error {
	return e.ws.WaitReady(ctx, h, sb)
}

func (e *Extension) Inspect(ctx context.Context, h *hosts.Host, sb *backends.Sandbox) (backends.Status, error) {
	return e.ws.Inspect(ctx, h, sb)
}

func (e *Extension) Teardown(ctx context.Context, h *hosts.Host, sb *backends.Sandbox) error {
	return e.ws.Teardown(ctx, h, sb)
}
