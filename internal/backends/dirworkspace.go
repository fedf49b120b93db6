package backends

import (
	"context"
	"fmt"
	"os"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/safepath"
)

// DirWorkspace is a sandbox that is an isolated workspace directory and
// nothing else: the mechanics of ext.vm-packer (attach mode) and of
// ext.saas-stub, kept here so that extensions never import one another.
// Teardown removes the workspace, never the machine it is on.
type DirWorkspace struct {
	// Ext is the extension name its records carry.
	Ext string
}

// DirWorkspaceName is the directory name of a directory sandbox's workspace.
func DirWorkspaceName(id string) string { return "sbx-" + id }

// dirWorkspaceBase is the profile's `workspace_base` setting, else root_dir.
func dirWorkspaceBase(p *catalog.Profile, h *hosts.Host) string {
	if p != nil && p.Settings["workspace_base"] != "" {
		return p.Settings["workspace_base"]
	}
	return h.RootDir
}

func (d DirWorkspace) Name() string { return d.Ext }

func (d DirWorkspace) Validate(p *catalog.Profile, inputs map[string]string) error {
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

// Prepare has no steps: the workspace is the sandbox.
func (d DirWorkspace) Prepare(ctx context.Context, req Request) (*Sandbox, []Step, error) {
	ws, err := WorkspaceDir(ctx, req.Host, dirWorkspaceBase(req.Profile, req.Host), DirWorkspaceName(req.ID))
	if err != nil {
		return nil, nil, err
	}
	return &Sandbox{WorkspaceDir: ws}, nil, nil
}

func (d DirWorkspace) WaitReady(ctx context.Context, h *hosts.Host, sb *Sandbox) (Status, error) {
	q := hosts.Quote(sb.WorkspaceDir)
	if err := h.Run(ctx, fmt.Sprintf("test -d %s && test -w %[1]s", q), nil, nil); err != nil {
		return Status{}, fmt.Errorf("workspace %s is not a writable directory: %w", sb.WorkspaceDir, err)
	}
	return Status{State: StatusReady}, nil
}

func (d DirWorkspace) Inspect(ctx context.Context, h *hosts.Host, sb *Sandbox) (Status, error) {
	out, err := hosts.Output(ctx, h, fmt.Sprintf("if test -d %s; then echo present; fi", hosts.Quote(sb.WorkspaceDir)))
	if err != nil {
		return Status{}, err
	}
	if string(out) == "present\n" {
		return Status{State: StatusReady}, nil
	}
	return Status{State: StatusMissing}, nil
}

var _ BatchInspector = DirWorkspace{}

// HostStatusScript needs no command: a directory sandbox's status is
// whether its workspace exists.
func (d DirWorkspace) HostStatusScript(context.Context, *hosts.Host) (string, error) { return "", nil }

// StatusFrom is Inspect's status: ready while the workspace exists.
func (d DirWorkspace) StatusFrom(_ string, workspace bool, _ *Sandbox) Status {
	if workspace {
		return Status{State: StatusReady}
	}
	return Status{State: StatusMissing}
}

func (d DirWorkspace) Teardown(ctx context.Context, h *hosts.Host, sb *Sandbox) error {
	return RemoveWorkspace(ctx, h, sb.WorkspaceDir, DirWorkspaceName(sb.ID))
}
