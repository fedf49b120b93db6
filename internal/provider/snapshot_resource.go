package provider

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/resourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/events"
)

var (
	_ resource.Resource                     = &SnapshotResource{}
	_ resource.ResourceWithConfigure        = &SnapshotResource{}
	_ resource.ResourceWithConfigValidators = &SnapshotResource{}
	_ resource.ResourceWithValidateConfig   = &SnapshotResource{}
	_ resource.ResourceWithModifyPlan       = &SnapshotResource{}
	_ resource.ResourceWithImportState      = &SnapshotResource{}
	_ resource.ResourceWithIdentity         = &SnapshotResource{}
)

// NewSnapshotResource is the resource constructor.
func NewSnapshotResource() resource.Resource { return &SnapshotResource{} }

// SnapshotResource is sandboxer_snapshot.
type SnapshotResource struct {
	data *providerData
}

func (r *SnapshotResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_snapshot"
}

func (r *SnapshotResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (r *SnapshotResource) ConfigValidators(context.Context) []resource.ConfigValidator {
	return []resource.ConfigValidator{
		resourcevalidator.ExactlyOneOf(path.MatchRoot("sandbox_id"), path.MatchRoot("source_snapshot_id")),
	}
}

// ValidateConfig checks paths and metadata at plan time.
func (r *SnapshotResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m snapshotModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	m.validate(ctx, &resp.Diagnostics)
}

// ModifyPlan refuses, at plan time, a snapshot of a sandbox whose extension
// cannot snapshot (when the sandbox already exists).
func (r *SnapshotResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if r.data == nil || req.Plan.Raw.IsNull() || !req.State.Raw.IsNull() {
		return
	}
	var plan snapshotModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !plan.SourceSnapshotID.IsNull() && plan.Quiesce.IsUnknown() {
		plan.Quiesce = types.StringValue(backends.QuiesceNone) // a copy touches no sandbox
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
	}
	var configHost types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("host"), &configHost)...)
	if plan.SandboxID.IsUnknown() || plan.SandboxID.IsNull() || configHost.IsUnknown() {
		return // the sandbox is created in this apply: checked, and quiesce resolved, at create
	}
	if configHost.ValueString() != "" {
		if _, err := r.data.host(configHost.ValueString()); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("host"), "Unknown Host", err.Error())
			return
		}
	}
	h, sb, err := r.data.locateSandbox(ctx, plan.SandboxID.ValueString(), configHost.ValueString())
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("sandbox_id"), "Unable to Plan Snapshot", err.Error())
		return
	}
	if plan.Host.IsUnknown() {
		plan.Host = types.StringValue(h.Host()) // where the sandbox was found: known at plan time
	}
	if _, err := r.data.registry.Snapshotter(sb.Profile, sb.Extension); err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("sandbox_id"), "Snapshots Not Supported", err.Error())
		return
	}
	if plan.IncludeVolumes.IsUnknown() {
		plan.IncludeVolumes = types.BoolValue(backends.DefaultIncludeVolumes(r.data.profileOf(sb)))
	}
	if plan.IncludeVolumes.ValueBool() && sb.ComposeProject == "" {
		resp.Diagnostics.AddAttributeError(path.Root("include_volumes"), "No Volumes to Capture",
			fmt.Sprintf("Sandbox %s (%s) is not a compose sandbox, so it has no named volumes: remove include_volumes = true.", sb.ID, sb.Profile))
		return
	}
	if plan.Quiesce.IsUnknown() {
		plan.Quiesce = types.StringValue(backends.DefaultQuiesce(r.data.profileOf(sb)))
	}
	if err := r.data.registry.CheckSnapshot(ctx, h, sb, plan.Quiesce.ValueString(), plan.IncludeVolumes.ValueBool()); err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("sandbox_id"), "Snapshot Not Possible", err.Error())
		return
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

func (r *SnapshotResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan snapshotModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Create(ctx, defaultCreateTimeout)
	resp.Diagnostics.Append(diags...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	id := "snap-" + backends.NewID()
	ctx = tflog.SetField(ctx, "snapshot_id", id)
	var (
		summary checkpoint.Summary
		host    string
		err     error
	)
	if src := plan.SourceSnapshotID.ValueString(); src != "" {
		summary, host, err = copySnapshot(ctx, r.data, src, plan.Host.ValueString(), id, plan.Name.ValueString())
		plan.Quiesce = types.StringValue(backends.QuiesceNone)
		plan.IncludeVolumes = types.BoolValue(len(summary.VolumeNames) > 0)
	} else {
		summary, host, err = captureSnapshot(ctx, r.data, &plan.captureArgs, id)
	}
	if err != nil {
		resp.Diagnostics.AddError("Unable to Create Snapshot", err.Error())
		return
	}
	tflog.Info(ctx, "snapshot created", map[string]any{"host": host, "size_bytes": summary.SizeBytes, "stored_bytes": summary.StoredBytes})
	plan.Host = types.StringValue(host)
	plan.fromSummary(ctx, summary, &resp.Diagnostics)
	r.data.emit(ctx, &resp.Diagnostics, events.Event{Event: events.SnapshotCreated, SnapshotID: summary.ID,
		SandboxID: summary.SandboxID, Host: host, Profile: summary.Profile})
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	setIdentity(ctx, resp.Identity, plan.Host, plan.ID, &resp.Diagnostics)
}

func (r *SnapshotResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state snapshotModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	h, err := r.data.host(state.Host.ValueString())
	if err != nil {
		resp.Diagnostics.AddError("Unable to Read Snapshot", err.Error())
		return
	}
	s, err := r.data.registry.RefreshSnapshot(ctx, h, state.ID.ValueString())
	if errors.Is(err, backends.ErrSnapshotNotFound) {
		tflog.Warn(ctx, "snapshot is gone from its host; removing it from state", map[string]any{"host": h.Host(), "snapshot_id": state.ID.ValueString()})
		resp.State.RemoveResource(ctx)
		// The framework wants an identity even for a resource it drops.
		setIdentity(ctx, resp.Identity, state.Host, state.ID, &resp.Diagnostics)
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("Unable to Read Snapshot", fmt.Sprintf("Snapshot %s on host %q: %v", state.ID.ValueString(), h.Host(), err))
		return
	}
	read := state
	state.fromSummary(ctx, s, &resp.Diagnostics)
	setIfChanged(ctx, &resp.State, &read, &state, &resp.Diagnostics)
	setIdentity(ctx, resp.Identity, state.Host, state.ID, &resp.Diagnostics)
}

// Update only changes retain_on_destroy (and timeouts): state only.
func (r *SnapshotResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan snapshotModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	setIdentity(ctx, resp.Identity, plan.Host, plan.ID, &resp.Diagnostics)
}

func (r *SnapshotResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state snapshotModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if state.RetainOnDestroy.ValueBool() {
		tflog.Info(ctx, "retain_on_destroy: leaving the snapshot on its host", map[string]any{"snapshot_id": state.ID.ValueString()})
		return
	}
	timeout, diags := state.Timeouts.Delete(ctx, defaultDeleteTimeout)
	resp.Diagnostics.Append(diags...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	h, err := r.data.host(state.Host.ValueString())
	if err != nil {
		resp.Diagnostics.AddError("Unable to Delete Snapshot", err.Error())
		return
	}
	if err := r.data.registry.DeleteSnapshot(ctx, h, state.ID.ValueString()); err != nil {
		resp.Diagnostics.AddError("Unable to Delete Snapshot", fmt.Sprintf("Snapshot %s on host %q: %v", state.ID.ValueString(), h.Host(), err))
		return
	}
	r.data.emit(ctx, &resp.Diagnostics, events.Event{Event: events.SnapshotDeleted, SnapshotID: state.ID.ValueString(),
		SandboxID: state.SandboxID.ValueString(), Host: h.Host()})
}

// ImportState takes HOST/SNAPSHOT_ID.
func (r *SnapshotResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	host, id, err := importTarget(ctx, req, "SNAPSHOT_ID")
	if err != nil {
		resp.Diagnostics.AddError("Unable to Import Snapshot", err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("host"), host)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), id)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("quiesce"), backends.QuiesceNone)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("retain_on_destroy"), false)...)
	setIdentity(ctx, resp.Identity, types.StringValue(host), types.StringValue(id), &resp.Diagnostics)
}
