package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

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
	_ resource.Resource                     = &RestoreResource{}
	_ resource.ResourceWithConfigure        = &RestoreResource{}
	_ resource.ResourceWithConfigValidators = &RestoreResource{}
	_ resource.ResourceWithModifyPlan       = &RestoreResource{}
)

// NewRestoreResource is the resource constructor.
func NewRestoreResource() resource.Resource { return &RestoreResource{} }

// RestoreResource is sandboxer_restore.
type RestoreResource struct {
	data *providerData
}

func (r *RestoreResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_restore"
}

func (r *RestoreResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (r *RestoreResource) ConfigValidators(context.Context) []resource.ConfigValidator {
	return []resource.ConfigValidator{
		resourcevalidator.Conflicting(path.MatchRoot("target_sandbox_id"), path.MatchRoot("profile")),
		resourcevalidator.Conflicting(path.MatchRoot("target_sandbox_id"), path.MatchRoot("inputs")),
	}
}

// ModifyPlan checks names it can check without touching a host.
func (r *RestoreResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if r.data == nil || req.Plan.Raw.IsNull() {
		return
	}
	var plan restoreModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if name := plan.Profile.ValueString(); name != "" {
		p, err := r.data.catalog.Get(name)
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("profile"), "Unknown Profile", err.Error())
		} else if _, err := r.data.registry.Snapshotter(p.Name, p.Extension); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("profile"), "Snapshots Not Supported", err.Error())
		}
	}
	if name := plan.Host.ValueString(); name != "" {
		if _, err := r.data.host(name); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("host"), "Unknown Host", err.Error())
		}
	}
}

func (r *RestoreResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan restoreModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Create(ctx, defaultCreateTimeout)
	resp.Diagnostics.Append(diags...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	snapshotID := plan.SnapshotID.ValueString()
	ctx = tflog.SetField(ctx, "snapshot_id", snapshotID)
	snapHost, summary, err := r.data.locateSnapshot(ctx, snapshotID, "")
	if err != nil {
		resp.Diagnostics.AddError("Unable to Restore Snapshot", err.Error())
		return
	}
	var (
		sb  *backends.Sandbox
		res checkpoint.RestoreResult
	)
	if plan.inPlace() {
		sb, res, err = restoreInPlace(ctx, r.data, &plan.restoreInPlaceArgs, snapHost, nil)
		if err != nil {
			resp.Diagnostics.AddError("Unable to Restore Snapshot", err.Error())
			return
		}
		plan.ID = types.StringValue(sb.ID + "-" + backends.NewID())
	} else {
		sb, res, err = restoreIntoNewSandbox(ctx, r.data, &plan, snapHost, summary)
		if err != nil {
			resp.Diagnostics.AddError("Unable to Restore Snapshot", err.Error())
			return
		}
		plan.ID = types.StringValue(sb.ID)
		ev := events.Event{SandboxID: sb.ID, Host: sb.Host, Profile: sb.Profile}
		ev.Event, ev.Timestamp = events.SandboxCreated, sb.CreatedAt
		r.data.emit(ctx, &resp.Diagnostics, ev)
		ev.Event, ev.Timestamp = events.SandboxReady, *sb.ReadyAt
		r.data.emit(ctx, &resp.Diagnostics, ev)
	}
	tflog.Info(ctx, "restore completed", map[string]any{"sandbox_id": sb.ID, "files_restored": res.FilesRestored})
	plan.Host = types.StringValue(sb.Host)
	plan.SandboxID = types.StringValue(sb.ID)
	plan.WorkspaceDir = types.StringValue(sb.WorkspaceDir)
	plan.Endpoints = types.MapNull(types.StringType)
	if !plan.inPlace() {
		plan.Endpoints = reachOf(backends.ReadyStatus(sb).Services, r.data.endpointHost(sb.Host)).endpoints
	}
	plan.FilesRestored = types.Int64Value(int64(res.FilesRestored))
	plan.RestoredAt = types.StringValue(r.data.registry.Now().Format(time.RFC3339))
	r.data.emit(ctx, &resp.Diagnostics, events.Event{Event: events.RestoreCompleted, SnapshotID: snapshotID,
		SandboxID: sb.ID, Host: sb.Host, Profile: sb.Profile})
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *RestoreResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state restoreModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() || state.inPlace() {
		return // an in-place restore is an event; there is nothing of its own to read
	}
	h, err := r.data.host(state.Host.ValueString())
	if err != nil {
		resp.Diagnostics.AddError("Unable to Read Restore", err.Error())
		return
	}
	// The host's refresh: the record and the services' ports in the one
	// command that reads every sandbox of the host.
	sb, st, err := r.data.registry.Refresh(ctx, h, state.SandboxID.ValueString())
	if errors.Is(err, backends.ErrNotFound) {
		tflog.Warn(ctx, "restored sandbox is gone from its host; removing it from state", map[string]any{"sandbox_id": state.SandboxID.ValueString()})
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("Unable to Read Restore", fmt.Sprintf("Sandbox %s on host %q: %v", state.SandboxID.ValueString(), h.Host(), err))
		return
	}
	state.WorkspaceDir = types.StringValue(sb.WorkspaceDir)
	state.Endpoints = reachOf(st.Services, h.EndpointHost).endpoints
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// Update only changes timeouts: every argument replaces.
func (r *RestoreResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan restoreModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *RestoreResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state restoreModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() || state.inPlace() {
		return // in place: the target sandbox is not this resource's to remove
	}
	timeout, diags := state.Timeouts.Delete(ctx, defaultDeleteTimeout)
	resp.Diagnostics.Append(diags...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r.data.destroySandbox(ctx, &resp.Diagnostics, "Unable to Delete Restored Sandbox",
		state.Host.ValueString(), state.SandboxID.ValueString(), state.Profile.ValueString())
}
