package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/resourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/events"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
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

type restoreModel struct {
	ID              types.String   `tfsdk:"id"`
	SnapshotID      types.String   `tfsdk:"snapshot_id"`
	Profile         types.String   `tfsdk:"profile"`
	Host            types.String   `tfsdk:"host"`
	Inputs          types.Map      `tfsdk:"inputs"`
	TargetSandboxID types.String   `tfsdk:"target_sandbox_id"`
	RestoreFiles    types.Bool     `tfsdk:"restore_files"`
	RestoreEnv      types.Bool     `tfsdk:"restore_env"`
	Overwrite       types.Bool     `tfsdk:"overwrite"`
	Prune           types.Bool     `tfsdk:"prune"`
	Triggers        types.Map      `tfsdk:"triggers"`
	SandboxID       types.String   `tfsdk:"sandbox_id"`
	WorkspaceDir    types.String   `tfsdk:"workspace_dir"`
	Endpoints       types.Map      `tfsdk:"endpoints"`
	FilesRestored   types.Int64    `tfsdk:"files_restored"`
	RestoredAt      types.String   `tfsdk:"restored_at"`
	Timeouts        timeouts.Value `tfsdk:"timeouts"`
}

func (m *restoreModel) inPlace() bool { return m.TargetSandboxID.ValueString() != "" }

func (r *RestoreResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_restore"
}

func (r *RestoreResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	keep := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	replaceBool := []planmodifier.Bool{boolplanmodifier.RequiresReplace()}
	resp.Schema = schema.Schema{
		Version: restoreSchemaVersion, // states of earlier versions: UpgradeState
		MarkdownDescription: "Restores a snapshot, in one of two modes. **New sandbox** (default): a sandbox is created whose " +
			"workspace is populated from the snapshot before it starts, then waited ready; the source sandbox is never " +
			"touched; destroying this resource tears the new sandbox down. **In place** (`target_sandbox_id`): the " +
			"snapshot is written into an existing sandbox, whose compose services are stopped around the write and " +
			"started and waited ready after; destroying this resource leaves the target alone. Every object is verified " +
			"against its digest before anything is written. The restore runs on create and again only when an argument " +
			"or `triggers` changes.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, PlanModifiers: keep, MarkdownDescription: "Id of this restore."},
			"snapshot_id": schema.StringAttribute{Required: true, PlanModifiers: replace, Validators: []validator.String{idValidator("snapshot")},
				MarkdownDescription: "Snapshot to restore (found on the provider's hosts)."},
			"profile": schema.StringAttribute{Optional: true, PlanModifiers: replace,
				MarkdownDescription: "New sandbox: its profile. Default: the profile of the snapshot's sandbox."},
			"host": schema.StringAttribute{Optional: true, Computed: true,
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown(), stringplanmodifier.RequiresReplace()},
				MarkdownDescription: "New sandbox: where it is created (default: the snapshot's host; another host gets the " +
					"snapshot's missing objects transferred first). In place: the target sandbox's host (found when unset)."},
			"inputs": schema.MapAttribute{Optional: true, ElementType: types.StringType,
				PlanModifiers:       []planmodifier.Map{mapplanmodifier.RequiresReplace()},
				MarkdownDescription: "New sandbox: profile inputs. A `repo` is copied first and the snapshot written over it."},
			"target_sandbox_id": schema.StringAttribute{Optional: true, PlanModifiers: replace, Validators: []validator.String{idValidator("sandbox")},
				MarkdownDescription: "In place: the sandbox to restore into."},
			"restore_files": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true), PlanModifiers: replaceBool,
				MarkdownDescription: "In place: restore files. Default `true`."},
			"restore_env": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true), PlanModifiers: replaceBool,
				MarkdownDescription: "In place: restore the captured env as the workspace `.env`. Default `true`."},
			"overwrite": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true), PlanModifiers: replaceBool,
				MarkdownDescription: "In place: files present in both take the snapshot's content (`true`, default) or are kept (`false`)."},
			"prune": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false), PlanModifiers: replaceBool,
				MarkdownDescription: "In place: remove files inside the snapshot's scope that the snapshot does not have, so the scope equals the snapshot exactly. Default `false`."},
			"triggers": schema.MapAttribute{Optional: true, ElementType: types.StringType,
				PlanModifiers:       []planmodifier.Map{mapplanmodifier.RequiresReplace()},
				MarkdownDescription: "Arbitrary values; changing any of them runs the restore again."},
			"sandbox_id": schema.StringAttribute{Computed: true, PlanModifiers: keep,
				MarkdownDescription: "The restored sandbox: the new one, or the target."},
			"workspace_dir": schema.StringAttribute{Computed: true, PlanModifiers: keep,
				MarkdownDescription: "Workspace of the restored sandbox on its host."},
			"endpoints": schema.MapAttribute{Computed: true, ElementType: types.StringType,
				MarkdownDescription: "A restore into a new sandbox: where its published ports are reached, as the sandbox resource's " +
					"`endpoints` (`\"<service>:<target>\"` to `\"<endpoint_host>:<published>\"`); updated by refresh. Null for a restore in " +
					"place: the target sandbox's own `endpoints` say it."},
			"files_restored": schema.Int64Attribute{Computed: true, PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
				MarkdownDescription: "Files and links written."},
			"restored_at": schema.StringAttribute{Computed: true, PlanModifiers: keep, MarkdownDescription: "When the restore completed (RFC 3339)."},
		},
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Delete: true}),
		},
	}
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
		h, target, err := r.data.locateSandbox(ctx, plan.TargetSandboxID.ValueString(), plan.Host.ValueString())
		if err != nil {
			resp.Diagnostics.AddError("Unable to Restore Snapshot", err.Error())
			return
		}
		res, err = r.data.registry.RestoreInPlace(ctx, snapHost, snapshotID, h, target.ID, checkpoint.RestoreOptions{
			Files: plan.RestoreFiles.ValueBool(), Env: plan.RestoreEnv.ValueBool(),
			Overwrite: plan.Overwrite.ValueBool(), Prune: plan.Prune.ValueBool(),
		})
		if err != nil {
			resp.Diagnostics.AddError("Unable to Restore Snapshot",
				fmt.Sprintf("Snapshot %s (host %q) into sandbox %s (host %q): %v", snapshotID, snapHost.Host(), target.ID, h.Host(), err))
			return
		}
		sb = target
		plan.ID = types.StringValue(target.ID + "-" + backends.NewID())
	} else {
		sb, res, err = r.restoreNew(ctx, &plan, snapHost, summary)
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

func (r *RestoreResource) restoreNew(ctx context.Context, plan *restoreModel, snapHost *hosts.Host, summary checkpoint.Summary) (*backends.Sandbox, checkpoint.RestoreResult, error) {
	var res checkpoint.RestoreResult
	profileName := plan.Profile.ValueString()
	if profileName == "" {
		profileName = summary.Profile
	}
	profile, err := r.data.catalog.Get(profileName)
	if err != nil {
		return nil, res, err
	}
	h := snapHost
	if name := plan.Host.ValueString(); name != "" {
		if h, err = r.data.host(name); err != nil {
			return nil, res, err
		}
	}
	var diags diag.Diagnostics
	inputs := stringMap(ctx, plan.Inputs, &diags)
	if len(inputs) > 0 {
		if err := profile.CheckInputs(inputs); err != nil {
			return nil, res, err
		}
	}
	sb, res, err := r.data.registry.RestoreNew(ctx, snapHost, summary.ID, backends.Request{
		ID: backends.NewID(), Profile: profile, Host: h, Inputs: inputs,
		Labels: map[string]string{"restored_from": summary.ID},
	})
	if err != nil {
		detail := fmt.Sprintf("Snapshot %s (host %q) into a new %s sandbox on host %q: %v", summary.ID, snapHost.Host(), profile.Name, h.Host(), err)
		if !errors.Is(err, backends.ErrCleanupFailed) {
			detail += "\n\nWhat was started for the new sandbox has been removed from the host."
		}
		return nil, res, errors.New(detail)
	}
	return sb, res, nil
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
