package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/events"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
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

func (a *RestoreAction) Metadata(_ context.Context, req action.MetadataRequest, resp *action.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_restore"
}

func (a *RestoreAction) Configure(_ context.Context, req action.ConfigureRequest, resp *action.ConfigureResponse) {
	a.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (a *RestoreAction) Invoke(ctx context.Context, req action.InvokeRequest, resp *action.InvokeResponse) {
	var m restoreInPlaceArgs
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
	target, res, err := restoreInPlace(ctx, a.data, &m, snapHost, func(target *backends.Sandbox, h *hosts.Host) {
		resp.SendProgress(action.InvokeProgressEvent{Message: fmt.Sprintf("restoring snapshot %s into sandbox %s on host %q", snapshotID, target.ID, h.Host())})
	})
	if err != nil {
		resp.Diagnostics.AddError("Unable to Restore Snapshot", err.Error())
		return
	}
	a.data.emit(ctx, &resp.Diagnostics, events.Event{Event: events.RestoreCompleted, SnapshotID: snapshotID,
		SandboxID: target.ID, Host: target.Host, Profile: target.Profile})
	resp.SendProgress(action.InvokeProgressEvent{Message: fmt.Sprintf("restored snapshot %s into sandbox %s: %d files", snapshotID, target.ID, res.FilesRestored)})
}
