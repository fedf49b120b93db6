package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/resourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
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

// maxMetadataBytes bounds a snapshot's metadata (keys plus values).
const maxMetadataBytes = 10 * 1024

// NewSnapshotResource is the resource constructor.
func NewSnapshotResource() resource.Resource { return &SnapshotResource{} }

// SnapshotResource is sandboxer_snapshot.
type SnapshotResource struct {
	data *providerData
}

type snapshotModel struct {
	ID               types.String   `tfsdk:"id"`
	SandboxID        types.String   `tfsdk:"sandbox_id"`
	SourceSnapshotID types.String   `tfsdk:"source_snapshot_id"`
	Host             types.String   `tfsdk:"host"`
	Name             types.String   `tfsdk:"name"`
	Description      types.String   `tfsdk:"description"`
	IncludePaths     types.List     `tfsdk:"include_paths"`
	ExcludePaths     types.List     `tfsdk:"exclude_paths"`
	IncludeEnv       types.Bool     `tfsdk:"include_env"`
	Metadata         types.Map      `tfsdk:"metadata"`
	RetainOnDestroy  types.Bool     `tfsdk:"retain_on_destroy"`
	Quiesce          types.String   `tfsdk:"quiesce"`
	IncludeVolumes   types.Bool     `tfsdk:"include_volumes"`
	Volumes          types.List     `tfsdk:"volumes"`
	VolumeNames      types.List     `tfsdk:"volume_names"`
	CreatedAt        types.String   `tfsdk:"created_at"`
	SizeBytes        types.Int64    `tfsdk:"size_bytes"`
	StoredBytes      types.Int64    `tfsdk:"stored_bytes"`
	FileCount        types.Int64    `tfsdk:"file_count"`
	Digest           types.String   `tfsdk:"digest"`
	EnvNames         types.List     `tfsdk:"env_names"`
	Timeouts         timeouts.Value `tfsdk:"timeouts"`
}

func (r *SnapshotResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_snapshot"
}

func (r *SnapshotResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	keep := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	keepInt := []planmodifier.Int64{int64planmodifier.UseStateForUnknown()}
	replaceList := []planmodifier.List{listplanmodifier.RequiresReplace()}
	resp.Schema = schema.Schema{
		MarkdownDescription: "A checkpoint of a sandbox's workspace, kept in the content-addressed store on the sandbox's host " +
			"(`<root_dir>/.sandboxer/store`): a file that did not change since another snapshot is stored once. The source " +
			"sandbox keeps running. With `source_snapshot_id` instead of `sandbox_id`, a copy of another snapshot, on the same " +
			"host or replicated to `host`. Every argument but `retain_on_destroy` forces a new snapshot.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, PlanModifiers: keep, MarkdownDescription: "Snapshot id, unique on its host."},
			"sandbox_id": schema.StringAttribute{Optional: true, Computed: true, Validators: []validator.String{idValidator("sandbox")},
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown(), stringplanmodifier.RequiresReplace()},
				MarkdownDescription: "Sandbox whose workspace is captured. For a copy, the original's sandbox."},
			"source_snapshot_id": schema.StringAttribute{Optional: true, PlanModifiers: replace, Validators: []validator.String{idValidator("snapshot")},
				MarkdownDescription: "Copy this snapshot instead of capturing a sandbox."},
			"host": schema.StringAttribute{Optional: true, Computed: true,
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown(), stringplanmodifier.RequiresReplace()},
				MarkdownDescription: "Host holding the snapshot. For a capture, the sandbox's host (found by asking the provider's hosts when unset). " +
					"For a copy, where the copy goes (default: the source's host); objects the host lacks are transferred."},
			"name":        schema.StringAttribute{Required: true, PlanModifiers: replace, MarkdownDescription: "Name of the snapshot."},
			"description": schema.StringAttribute{Optional: true, PlanModifiers: replace, MarkdownDescription: "Free-form description."},
			"include_paths": schema.ListAttribute{Optional: true, ElementType: types.StringType, PlanModifiers: replaceList,
				MarkdownDescription: "Paths or glob patterns, relative to the workspace, to capture (default: everything). " +
					"`*` matches within a path element, `**` across elements; a directory takes its subtree."},
			"exclude_paths": schema.ListAttribute{Optional: true, ElementType: types.StringType, PlanModifiers: replaceList,
				MarkdownDescription: "Patterns to leave out, e.g. `**/*.log` or `node_modules` (a pattern without `/` matches at any depth). " +
					"The workspace `.env` is never captured as a file: see `include_env`."},
			"include_env": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				PlanModifiers:       []planmodifier.Bool{boolplanmodifier.RequiresReplace()},
				MarkdownDescription: "Also capture the sandbox's env (its workspace `.env`). Values stay on the host (mode 0600) and never enter Terraform state; `env_names` lists the names."},
			"metadata": schema.MapAttribute{Optional: true, ElementType: types.StringType,
				PlanModifiers:       []planmodifier.Map{mapplanmodifier.RequiresReplace()},
				MarkdownDescription: "Free-form key/value metadata, at most 10 KB."},
			"retain_on_destroy": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Keep the snapshot on the host when the resource is destroyed. Changes in place."},
			"quiesce": schema.StringAttribute{Optional: true, Computed: true,
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown(), stringplanmodifier.RequiresReplace()},
				Validators:    []validator.String{stringvalidator.OneOf(backends.QuiesceNone, backends.QuiescePause, backends.QuiesceStop)},
				MarkdownDescription: "`none`; `pause`: every compose service of the sandbox is paused from the first byte read " +
					"to the last, so the workspace and all volumes are from one moment, and always unpaused after (also on failure); " +
					"`stop`: the services are stopped for the capture and started (and waited ready) after, for applications that " +
					"need a clean shutdown. Default: the sandbox profile's `snapshots.quiesce` (`pause` for " +
					"`profile.compose-checkpoint`), else `none`."},
			"include_volumes": schema.BoolAttribute{Optional: true, Computed: true,
				PlanModifiers:       []planmodifier.Bool{boolplanmodifier.UseStateForUnknown(), boolplanmodifier.RequiresReplace()},
				MarkdownDescription: "Also capture the sandbox's named compose volumes (those its compose project created; never bind mounts or external volumes) into the same store, with owners and modes. Default: the profile's `snapshots.volumes` (true for `profile.compose-checkpoint`). Restores write them back: into a new sandbox's new volumes before it starts, or in place while its services are stopped."},
			"volumes": schema.ListAttribute{Optional: true, ElementType: types.StringType, PlanModifiers: replaceList,
				Validators: []validator.List{listvalidator.ValueStringsAre(stringvalidator.RegexMatches(checkpoint.VolumeNamePattern,
					"must be a compose volume name"))},
				MarkdownDescription: "Capture only these compose volumes (their names in the compose file, e.g. `db-data`). Default: all of them."},
			"volume_names": schema.ListAttribute{Computed: true, ElementType: types.StringType,
				PlanModifiers:       []planmodifier.List{listplanmodifier.UseStateForUnknown()},
				MarkdownDescription: "Compose volumes the snapshot holds. `file_count`, `size_bytes`, `stored_bytes` and `digest` cover them too."},
			"created_at":   schema.StringAttribute{Computed: true, PlanModifiers: keep, MarkdownDescription: "When the snapshot was taken (RFC 3339)."},
			"size_bytes":   schema.Int64Attribute{Computed: true, PlanModifiers: keepInt, MarkdownDescription: "Logical size: the sum of the captured files."},
			"stored_bytes": schema.Int64Attribute{Computed: true, PlanModifiers: keepInt, MarkdownDescription: "Bytes this snapshot newly added to the host's store, as stored on disk: unchanged content is shared, and files that compress are stored zstd-compressed."},
			"file_count":   schema.Int64Attribute{Computed: true, PlanModifiers: keepInt, MarkdownDescription: "Number of files captured."},
			"digest": schema.StringAttribute{Computed: true, PlanModifiers: keep,
				MarkdownDescription: "sha256 of the canonical manifest: equal digests mean equal content."},
			"env_names": schema.ListAttribute{Computed: true, ElementType: types.StringType,
				PlanModifiers:       []planmodifier.List{listplanmodifier.UseStateForUnknown()},
				MarkdownDescription: "Names of the captured env variables."},
		},
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Delete: true}),
		},
	}
}

func (r *SnapshotResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = hostIDIdentity("snapshot")
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
	validateSnapshotArgs(ctx, m.IncludePaths, m.ExcludePaths, m.Metadata, &resp.Diagnostics)
	validateVolumeArgs(m.IncludeVolumes, m.Volumes, &resp.Diagnostics)
}

// validateVolumeArgs refuses volumes named for a snapshot that takes none.
func validateVolumeArgs(include types.Bool, volumes types.List, diags *diag.Diagnostics) {
	if !include.IsNull() && !include.IsUnknown() && !include.ValueBool() && !volumes.IsNull() {
		diags.AddAttributeError(path.Root("volumes"), "Volumes Without include_volumes",
			"volumes names compose volumes to capture, but include_volumes = false captures none: remove one of them.")
	}
}

// validateSnapshotArgs holds a capture's paths and metadata to the
// store's rules, for the resource and the action alike, before any host
// is contacted. Unknown values are checked when they are known.
func validateSnapshotArgs(ctx context.Context, include, exclude types.List, metadata types.Map, diags *diag.Diagnostics) {
	if !include.IsUnknown() && !exclude.IsUnknown() {
		f := checkpoint.Filter{Include: stringList(ctx, include, diags), Exclude: stringList(ctx, exclude, diags)}
		if err := f.Validate(); err != nil {
			diags.AddAttributeError(path.Root("include_paths"), "Invalid Snapshot Paths", err.Error())
		}
	}
	if !metadata.IsUnknown() {
		size := 0
		for k, v := range stringMap(ctx, metadata, diags) {
			size += len(k) + len(v)
		}
		if size > maxMetadataBytes {
			diags.AddAttributeError(path.Root("metadata"), "Snapshot Metadata Too Large",
				fmt.Sprintf("metadata holds %d bytes; at most %d are allowed", size, maxMetadataBytes))
		}
	}
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
		plan.IncludeVolumes = types.BoolValue(backends.DefaultIncludeVolumes(r.profileOf(sb)))
	}
	if plan.IncludeVolumes.ValueBool() && sb.ComposeProject == "" {
		resp.Diagnostics.AddAttributeError(path.Root("include_volumes"), "No Volumes to Capture",
			fmt.Sprintf("Sandbox %s (%s) is not a compose sandbox, so it has no named volumes: remove include_volumes = true.", sb.ID, sb.Profile))
		return
	}
	if plan.Quiesce.IsUnknown() {
		plan.Quiesce = types.StringValue(backends.DefaultQuiesce(r.profileOf(sb)))
	}
	if err := r.data.registry.CheckSnapshot(ctx, h, sb, plan.Quiesce.ValueString(), plan.IncludeVolumes.ValueBool()); err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("sandbox_id"), "Snapshot Not Possible", err.Error())
		return
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// profileOf is the catalog's profile of an existing sandbox; nil when the
// profile is no longer in the catalog (its snapshots then use no profile
// limits and quiesce none).
func (r *SnapshotResource) profileOf(sb *backends.Sandbox) *catalog.Profile {
	p, err := r.data.catalog.Get(sb.Profile)
	if err != nil {
		return nil
	}
	return p
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
		summary, host, err = r.copy(ctx, src, plan.Host.ValueString(), id, plan.Name.ValueString())
		plan.Quiesce = types.StringValue(backends.QuiesceNone)
		plan.IncludeVolumes = types.BoolValue(len(summary.VolumeNames) > 0)
	} else {
		summary, host, err = r.capture(ctx, &plan, id)
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

func (r *SnapshotResource) capture(ctx context.Context, plan *snapshotModel, id string) (checkpoint.Summary, string, error) {
	h, sb, err := r.data.locateSandbox(ctx, plan.SandboxID.ValueString(), plan.Host.ValueString())
	if err != nil {
		return checkpoint.Summary{}, "", err
	}
	profile := r.profileOf(sb)
	if plan.Quiesce.IsUnknown() || plan.Quiesce.IsNull() {
		plan.Quiesce = types.StringValue(backends.DefaultQuiesce(profile))
	}
	if plan.IncludeVolumes.IsUnknown() || plan.IncludeVolumes.IsNull() {
		plan.IncludeVolumes = types.BoolValue(backends.DefaultIncludeVolumes(profile))
	}
	var diags diag.Diagnostics
	s, err := r.data.registry.Snapshot(ctx, h, backends.SnapshotRequest{
		ID:          id,
		SandboxID:   sb.ID,
		Name:        plan.Name.ValueString(),
		Description: plan.Description.ValueString(),
		Metadata:    stringMap(ctx, plan.Metadata, &diags),
		Filter: checkpoint.Filter{
			Include: stringList(ctx, plan.IncludePaths, &diags),
			Exclude: stringList(ctx, plan.ExcludePaths, &diags),
		},
		IncludeEnv:     plan.IncludeEnv.ValueBool(),
		Quiesce:        plan.Quiesce.ValueString(),
		IncludeVolumes: plan.IncludeVolumes.ValueBoolPointer(),
		Volumes:        volumeList(ctx, plan.Volumes, &diags),
		Profile:        profile,
		Sandbox:        sb,
	})
	if diags.HasError() {
		return s, h.Host(), fmt.Errorf("invalid snapshot arguments: %v", diags)
	}
	if err != nil {
		return s, h.Host(), fmt.Errorf("sandbox %s on host %q: %w", sb.ID, h.Host(), err)
	}
	return s, h.Host(), nil
}

func (r *SnapshotResource) copy(ctx context.Context, src, dstName, id, name string) (checkpoint.Summary, string, error) {
	srcHost, _, err := r.data.locateSnapshot(ctx, src, "")
	if err != nil {
		return checkpoint.Summary{}, "", err
	}
	dst := srcHost
	if dstName != "" {
		if dst, err = r.data.host(dstName); err != nil {
			return checkpoint.Summary{}, "", err
		}
	}
	s, err := r.data.registry.CopySnapshot(ctx, srcHost, src, dst, id, name)
	if err != nil {
		return s, dst.Host(), fmt.Errorf("copy of snapshot %s from host %q to host %q: %w", src, srcHost.Host(), dst.Host(), err)
	}
	return s, dst.Host(), nil
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
	state.fromSummary(ctx, s, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
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

// fromSummary fills the model from what the host's store says. Snapshots
// are immutable, so the arguments a configuration set are kept as written
// (a copy inherits the original's description, filters and metadata, which
// its configuration need not repeat); after an import, when there is no
// configuration yet, they are filled from the host.
func (m *snapshotModel) fromSummary(ctx context.Context, s checkpoint.Summary, d *diag.Diagnostics) {
	if m.Name.IsNull() { // import
		m.Name = types.StringValue(s.Name)
		m.Description = stringOrNull(s.Description)
		m.SourceSnapshotID = stringOrNull(s.Source)
		m.Metadata = mapFromHost(ctx, m.Metadata, s.Metadata, d)
		m.IncludePaths = listFromHost(ctx, m.IncludePaths, s.Include, d)
		m.ExcludePaths = listFromHost(ctx, m.ExcludePaths, s.Exclude, d)
		m.IncludeEnv = types.BoolValue(len(s.EnvNames) > 0)
		m.IncludeVolumes = types.BoolValue(len(s.VolumeNames) > 0)
	}
	m.ID = types.StringValue(s.ID)
	if m.SandboxID.IsNull() || m.SandboxID.IsUnknown() {
		m.SandboxID = stringOrNull(s.SandboxID)
	}
	names := s.EnvNames
	if names == nil {
		names = []string{}
	}
	envNames, dd := types.ListValueFrom(ctx, types.StringType, names)
	d.Append(dd...)
	m.EnvNames = envNames
	volumes, dd := types.ListValueFrom(ctx, types.StringType, nonNilList(s.VolumeNames))
	d.Append(dd...)
	m.VolumeNames = volumes
	m.CreatedAt = types.StringValue(s.CreatedAt.UTC().Format(time.RFC3339))
	m.SizeBytes = types.Int64Value(s.SizeBytes)
	m.StoredBytes = types.Int64Value(s.StoredBytes)
	m.FileCount = types.Int64Value(int64(s.FileCount))
	m.Digest = types.StringValue(s.Digest)
}

// volumeList is the volumes argument: nil (every volume) when unset.
func volumeList(ctx context.Context, v types.List, diags *diag.Diagnostics) []string {
	if v.IsNull() || v.IsUnknown() {
		return nil
	}
	return stringList(ctx, v, diags)
}

func nonNilList(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}
