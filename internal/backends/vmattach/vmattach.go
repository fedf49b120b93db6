// Package vmattach is ext.vm-packer in attach mode: a sandbox is an isolated
// workspace directory on an existing machine (a pre-built VM reached over
// SSH, or this machine). Teardown removes the workspace, never the machine.
package vmattach

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/safepath"
)

// Name is the extension's catalog name.
const Name = "ext.vm-packer"

// Extension implements backends.Extension.
type Extension struct {
	Now func() time.Time
}

var _ backends.Extension = (*Extension)(nil)

// New returns the extension.
func New() *Extension { return &Extension{Now: time.Now} }

func (e *Extension) Name() string { return Name }

// workspaceName is the directory name of a sandbox's workspace.
func workspaceName(id string) string { return "sbx-" + id }

// workspaceBase is the profile's `workspace_base` setting, else root_dir.
func workspaceBase(p *catalog.Profile, h *hosts.Host) string {
	if p != nil && p.Settings["workspace_base"] != "" {
		return p.Settings["workspace_base"]
	}
	return h.RootDir
}

func (e *Extension) Validate(p *catalog.Profile, inputs map[string]string) error {
	if base := p.Settings["workspace_base"]; base != "" {
		if err := safepath.NoParentSteps(base); err != nil {
			return fmt.Errorf("profile %s: setting workspace_base: %w", p.Name, err)
		}
	}
	if repo := inputs["repo"]; repo != "" {
		if err := safepath.NoParentSteps(repo); err != nil {
			return fmt.Errorf("input repo: %w", err)
		}
		if st, err := os.Stat(repo); err != nil || !st.IsDir() {
			return fmt.Errorf("input repo: %s is not a readable directory on this machine", repo)
		}
	}
	return nil
}

func (e *Extension) Provision(ctx context.Context, req backends.Request) (*backends.Sandbox, error) {
	ws, err := backends.MakeWorkspace(ctx, req.Host, workspaceBase(req.Profile, req.Host), workspaceName(req.ID))
	if err != nil {
		return nil, err
	}
	sb := &backends.Sandbox{
		ID: req.ID, Host: req.Host.Host(), Profile: req.Profile.Name, Extension: Name,
		Inputs: req.Inputs, Labels: req.Labels, WorkspaceDir: ws, SourceHash: req.SourceHash,
		CreatedAt: e.Now().UTC(),
	}
	if err := backends.PopulateWorkspace(ctx, req, ws); err != nil {
		return nil, backends.CleanUpAfter(ctx, err, req.Host, sb.ID, func(ctx context.Context) error {
			return e.Teardown(ctx, req.Host, sb)
		})
	}
	return sb, nil
}

func (e *Extension) WaitReady(ctx context.Context, h *hosts.Host, sb *backends.Sandbox) error {
	q := hosts.Quote(sb.WorkspaceDir)
	if err := h.Run(ctx, fmt.Sprintf("test -d %s && test -w %[1]s", q), nil, nil); err != nil {
		return fmt.Errorf("workspace %s is not a writable directory: %w", sb.WorkspaceDir, err)
	}
	return nil
}

func (e *Extension) Inspect(ctx context.Context, h *hosts.Host, sb *backends.Sandbox) (backends.Status, error) {
	out, err := hosts.Output(ctx, h, fmt.Sprintf("if test -d %s; then echo present; fi", hosts.Quote(sb.WorkspaceDir)))
	if err != nil {
		return backends.Status{}, err
	}
	if string(out) == "present\n" {
		return backends.Status{State: backends.StatusReady}, nil
	}
	return backends.Status{State: backends.StatusMissing}, nil
}

func (e *Extension) Teardown(ctx context.Context, h *hosts.Host, sb *backends.Sandbox) error {
	return backends.RemoveWorkspace(ctx, h, sb.WorkspaceDir, workspaceName(sb.ID))
}

// A workspace has no processes of its own to hold still: snapshots and
// restores read and write it directly.
var _ backends.Snapshotter = (*Extension)(nil)

func (e *Extension) Pause(context.Context, *hosts.Host, *backends.Sandbox) error   { return nil }
func (e *Extension) Unpause(context.Context, *hosts.Host, *backends.Sandbox) error { return nil }
func (e *Extension) Stop(context.Context, *hosts.Host, *backends.Sandbox) error    { return nil }
func (e *Extension) Start(context.Context, *hosts.Host, *backends.Sandbox) error   { return nil }
