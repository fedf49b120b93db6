package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
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

type snapshotActionModel struct {
	SandboxID      types.String `tfsdk:"sandbox_id"`
	Host           types.String `tfsdk:"host"`
	Name           types.String `tfsdk:"name"`
	Description    types.String `tfsdk:"description"`
	IncludePaths   types.List   `tfsdk:"include_paths"`
	ExcludePaths   types.List   `tfsdk:"exclude_paths"`
	IncludeEnv     types.Bool   `tfsdk:"include_env"`
	Metadata       types.Map    `tfsdk:"metadata"`
	Quiesce        types.String `tfsdk:"quiesce"`
	IncludeVolumes types.Bool   `tfsdk:"include_volumes"`
	Volumes        types.List   `tfsdk:"volumes"`
}

func (a *SnapshotAction) Metadata(_ context.Context, req action.MetadataRequest, resp *action.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_snapshot"
}

func (a *SnapshotAction) Schema(_ context.Context, _ action.SchemaRequest, resp *action.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Takes a checkpoint of a sandbox now, with the arguments of the `sandboxer_snapshot` resource. " +
			"The snapshot is kept in the host's store and listed by `sandboxer_snapshots` (restore it by its id), " +
			"but it is not managed in state: nothing destroys it. Reports the snapshot's id, size and digest. " +
			"Needs Terraform 1.14 or later.",
		Attributes: map[string]schema.Attribute{
			"sandbox_id": schema.StringAttribute{Required: true, Validators: []validator.String{idValidator("sandbox")},
				MarkdownDescription: "Sandbox whose workspace is captured."},
			"host": schema.StringAttribute{Optional: true,
				MarkdownDescription: "The sandbox's host (found by asking the provider's hosts when unset)."},
			"name":        schema.StringAttribute{Required: true, MarkdownDescription: "Name of the snapshot."},
			"description": schema.StringAttribute{Optional: true, MarkdownDescription: "Free-form description."},
			"include_paths": schema.ListAttribute{Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Paths or glob patterns, relative to the workspace, to capture (default: everything)."},
			"exclude_paths": schema.ListAttribute{Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Patterns to leave out, e.g. `**/*.log`."},
			"include_env": schema.BoolAttribute{Optional: true,
				MarkdownDescription: "Also capture the sandbox's env (its workspace `.env`); values stay on the host. Default `false`."},
			"metadata": schema.MapAttribute{Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Free-form key/value metadata, at most 10 KB."},
			"quiesce": schema.StringAttribute{Optional: true,
				Validators:          []validator.String{stringvalidator.OneOf(backends.QuiesceNone, backends.QuiescePause, backends.QuiesceStop)},
				MarkdownDescription: "`none`, `pause` or `stop`, as for the resource. Default: the sandbox profile's `snapshots.quiesce`, else `none`."},
			"include_volumes": schema.BoolAttribute{Optional: true,
				MarkdownDescription: "Also capture the sandbox's named compose volumes, as for the resource. Default: the profile's `snapshots.volumes`."},
			"volumes": schema.ListAttribute{Optional: true, ElementType: types.StringType,
				Validators: []validator.List{listvalidator.ValueStringsAre(stringvalidator.RegexMatches(checkpoint.VolumeNamePattern,
					"must be a compose volume name"))},
				MarkdownDescription: "Capture only these compose volumes. Default: all of them."},
		},
	}
}

func (a *SnapshotAction) Configure(_ context.Context, req action.ConfigureRequest, resp *action.ConfigureResponse) {
	a.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

// ValidateConfig holds paths and metadata to the resource's rules at plan
// time, so a bad action fails before anything runs.
func (a *SnapshotAction) ValidateConfig(ctx context.Context, req action.ValidateConfigRequest, resp *action.ValidateConfigResponse) {
	var m snapshotActionModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	validateSnapshotArgs(ctx, m.IncludePaths, m.ExcludePaths, m.Metadata, &resp.Diagnostics)
	validateVolumeArgs(m.IncludeVolumes, m.Volumes, &resp.Diagnostics)
}

func (a *SnapshotAction) Invoke(ctx context.Context, req action.InvokeRequest, resp *action.InvokeResponse) {
	var m snapshotActionModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, defaultCreateTimeout)
	defer cancel()
	// The resource's capture, with the same arguments.
	plan := snapshotModel{
		SandboxID: m.SandboxID, Host: m.Host, Name: m.Name, Description: m.Description,
		IncludePaths: m.IncludePaths, ExcludePaths: m.ExcludePaths, IncludeEnv: m.IncludeEnv,
		Metadata: m.Metadata, Quiesce: m.Quiesce, IncludeVolumes: m.IncludeVolumes, Volumes: m.Volumes,
	}
	id := "snap-" + backends.NewID()
	ctx = tflog.SetField(ctx, "snapshot_id", id)
	resp.SendProgress(action.InvokeProgressEvent{Message: fmt.Sprintf("capturing sandbox %s as snapshot %s", m.SandboxID.ValueString(), id)})
	summary, host, err := (&SnapshotResource{data: a.data}).capture(ctx, &plan, id)
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
