package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/events"
)

var (
	_ action.Action              = &RestoreAction{}
	_ action.ActionWithConfigure = &RestoreAction{}
)

// NewRestoreAction is the action constructor.
func NewRestoreAction() action.Action { return &RestoreAction{} }

// RestoreAction is the sandboxer_restore action: roll a sandbox back to a
// snapshot now, in place.
type RestoreAction struct {
	data *providerData
}

type restoreActionModel struct {
	SnapshotID      types.String `tfsdk:"snapshot_id"`
	TargetSandboxID types.String `tfsdk:"target_sandbox_id"`
	Host            types.String `tfsdk:"host"`
	RestoreFiles    types.Bool   `tfsdk:"restore_files"`
	RestoreEnv      types.Bool   `tfsdk:"restore_env"`
	Overwrite       types.Bool   `tfsdk:"overwrite"`
	Prune           types.Bool   `tfsdk:"prune"`
}

func (a *RestoreAction) Metadata(_ context.Context, req action.MetadataRequest, resp *action.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_restore"
}

func (a *RestoreAction) Schema(_ context.Context, _ action.SchemaRequest, resp *action.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Restores a snapshot into an existing sandbox now, in place, as the `sandboxer_restore` resource " +
			"with `target_sandbox_id` does on create: its compose services are stopped, every object is verified against " +
			"its digest, files (and the captured `.env`) are written, and the services are started and waited ready. " +
			"The one-shot form; the resource stays for declarative restores. Needs Terraform 1.14 or later.",
		Attributes: map[string]schema.Attribute{
			"snapshot_id": schema.StringAttribute{Required: true, Validators: []validator.String{idValidator("snapshot")},
				MarkdownDescription: "Snapshot to restore, on any of the provider's hosts."},
			"target_sandbox_id": schema.StringAttribute{Required: true, Validators: []validator.String{idValidator("sandbox")},
				MarkdownDescription: "Sandbox rolled back to the snapshot."},
			"host": schema.StringAttribute{Optional: true,
				MarkdownDescription: "The target sandbox's host (found by asking the provider's hosts when unset)."},
			"restore_files": schema.BoolAttribute{Optional: true, MarkdownDescription: "Restore files. Default `true`."},
			"restore_env": schema.BoolAttribute{Optional: true,
				MarkdownDescription: "Restore the captured env as the workspace `.env`. Default `true`."},
			"overwrite": schema.BoolAttribute{Optional: true,
				MarkdownDescription: "Files present in both take the snapshot's content (`true`, default) or are kept (`false`)."},
			"prune": schema.BoolAttribute{Optional: true,
				MarkdownDescription: "Remove files inside the snapshot's scope that the snapshot does not have. Default `false`."},
		},
	}
}

func (a *RestoreAction) Configure(_ context.Context, req action.ConfigureRequest, resp *action.ConfigureResponse) {
	a.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

// boolOr is b's value, or def when b is unset.
func boolOr(b types.Bool, def bool) bool {
	if b.IsNull() || b.IsUnknown() {
		return def
	}
	return b.ValueBool()
}

func (a *RestoreAction) Invoke(ctx context.Context, req action.InvokeRequest, resp *action.InvokeResponse) {
	var m restoreActionModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, defaultCreateTimeout)
	defer cancel()
	snapshotID := m.SnapshotID.ValueString()
	ctx = tflog.SetField(ctx, "snapshot_id", snapshotID)
	snapHost, _, err := a.data.locateSnapshot(ctx, snapshotID, "")
	if err != nil {
		resp.Diagnostics.AddError("Unable to Restore Snapshot", err.Error())
		return
	}
	h, target, err := a.data.locateSandbox(ctx, m.TargetSandboxID.ValueString(), m.Host.ValueString())
	if err != nil {
		resp.Diagnostics.AddError("Unable to Restore Snapshot", err.Error())
		return
	}
	resp.SendProgress(action.InvokeProgressEvent{Message: fmt.Sprintf("restoring snapshot %s into sandbox %s on host %q", snapshotID, target.ID, h.Host())})
	res, err := a.data.registry.RestoreInPlace(ctx, snapHost, snapshotID, h, target.ID, checkpoint.RestoreOptions{
		Files: boolOr(m.RestoreFiles, true), Env: boolOr(m.RestoreEnv, true),
		Overwrite: boolOr(m.Overwrite, true), Prune: boolOr(m.Prune, false),
	})
	if err != nil {
		resp.Diagnostics.AddError("Unable to Restore Snapshot",
			fmt.Sprintf("Snapshot %s (host %q) into sandbox %s (host %q): %v", snapshotID, snapHost.Host(), target.ID, h.Host(), err))
		return
	}
	a.data.emit(ctx, &resp.Diagnostics, events.Event{Event: events.RestoreCompleted, SnapshotID: snapshotID,
		SandboxID: target.ID, Host: target.Host, Profile: target.Profile})
	resp.SendProgress(action.InvokeProgressEvent{Message: fmt.Sprintf("restored snapshot %s into sandbox %s: %d files", snapshotID, target.ID, res.FilesRestored)})
}
