package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/events"
)

var (
	_ action.Action                   = &SnapshotAction{}
	_ action.ActionWithConfigure      = &SnapshotAction{}
	_ action.ActionWithValidateConfig = &SnapshotAction{}
)

// NewSnapshotAction is the action constructor.
func NewSnapshotAction() action.Action { return &SnapshotAction{} }

// SnapshotAction is the sandboxer_snapshot action: take a checkpoint now,
// kept on the host and listed, not managed in state.
type SnapshotAction struct {
	data *providerData
}

func (a *SnapshotAction) Metadata(_ context.Context, req action.MetadataRequest, resp *action.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_snapshot"
}

func (a *SnapshotAction) Configure(_ context.Context, req action.ConfigureRequest, resp *action.ConfigureResponse) {
	a.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

// ValidateConfig holds paths and metadata to the resource's rules at plan
// time, so a bad action fails before anything runs.
func (a *SnapshotAction) ValidateConfig(ctx context.Context, req action.ValidateConfigRequest, resp *action.ValidateConfigResponse) {
	var m captureArgs
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	m.validate(ctx, &resp.Diagnostics)
}

func (a *SnapshotAction) Invoke(ctx context.Context, req action.InvokeRequest, resp *action.InvokeResponse) {
	var m captureArgs
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, defaultCreateTimeout)
	defer cancel()
	id := "snap-" + backends.NewID()
	ctx = tflog.SetField(ctx, "snapshot_id", id)
	resp.SendProgress(action.InvokeProgressEvent{Message: fmt.Sprintf("capturing sandbox %s as snapshot %s", m.SandboxID.ValueString(), id)})
	summary, host, err := captureSnapshot(ctx, a.data, &m, id)
	if err != nil {
		resp.Diagnostics.AddError("Unable to Take Snapshot", err.Error())
		return
	}
	a.data.emit(ctx, &resp.Diagnostics, events.Event{Event: events.SnapshotCreated, SnapshotID: summary.ID,
		SandboxID: summary.SandboxID, Host: host, Profile: summary.Profile})
	resp.SendProgress(action.InvokeProgressEvent{Message: fmt.Sprintf(
		"snapshot %s of sandbox %s on host %q: %d files, %d bytes (%d new in the store), %s",
		summary.ID, summary.SandboxID, host, summary.FileCount, summary.SizeBytes, summary.StoredBytes, summary.Digest)})
}
