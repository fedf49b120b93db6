package provider

import (
	"context"
	"maps"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/action"
	actionschema "github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	listschema "github.com/hashicorp/terraform-plugin-framework/list/schema"
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

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
)

// sandboxer_snapshot: the schemas of the resource, the action and the list
// resource, their models, and how a snapshot in a host's store becomes
// state.

// captureArgs are the arguments of a capture: the action's model, and
// part of the resource's.
type captureArgs struct {
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

// snapshotModel is the sandboxer_snapshot resource's data.
type snapshotModel struct {
	captureArgs
	ID               types.String   `tfsdk:"id"`
	SourceSnapshotID types.String   `tfsdk:"source_snapshot_id"`
	RetainOnDestroy  types.Bool     `tfsdk:"retain_on_destroy"`
	VolumeNames      types.List     `tfsdk:"volume_names"`
	CreatedAt        types.String   `tfsdk:"created_at"`
	SizeBytes        types.Int64    `tfsdk:"size_bytes"`
	StoredBytes      types.Int64    `tfsdk:"stored_bytes"`
	FileCount        types.Int64    `tfsdk:"file_count"`
	Digest           types.String   `tfsdk:"digest"`
	EnvNames         types.List     `tfsdk:"env_names"`
	Timeouts         timeouts.Value `tfsdk:"timeouts"`
}

// captureAttributes are the arguments of a capture as the resource takes
// them; the action takes the same ones (actionAttributes).
func captureAttributes() map[string]schema.Attribute {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	replaceList := []planmodifier.List{listplanmodifier.RequiresReplace()}
	return map[string]schema.Attribute{
		"sandbox_id": schema.StringAttribute{Optional: true, Computed: true, Validators: []validator.String{idValidator("sandbox")},
			PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown(), stringplanmodifier.RequiresReplace()},
			MarkdownDescription: "Sandbox whose workspace is captured. For a copy, the original's sandbox."},
		"host": schema.StringAttribute{Optional: true, Computed: true,
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown(), stringplanmodifier.RequiresReplace()},
			MarkdownDescription: "Host holding the snapshot. For a capture, the sandbox's host (found by asking the provider's hosts when unset). " +
				"For a copy (the resource's `source_snapshot_id`), where the copy goes (default: the source's host); objects the host " +
				"lacks are transferred."},
		"name":        schema.StringAttribute{Required: true, PlanModifiers: replace, MarkdownDescription: "Name of the snapshot."},
		"description": schema.StringAttribute{Optional: true, PlanModifiers: replace, MarkdownDescription: "Free-form description."},
		"include_paths": schema.ListAttribute{Optional: true, ElementType: types.StringType, PlanModifiers: replaceList,
			MarkdownDescription: "Paths or glob patterns, relative to the workspace, to capture (default: everything). " +
				"`*` matches within a path element, `**` across elements; a directory takes its subtree."},
		"exclude_paths": schema.ListAttribute{Optional: true, ElementType: types.StringType, PlanModifiers: replaceList,
			MarkdownDescription: "Patterns to leave out, e.g. `**/*.log` or `node_modules` (a pattern without `/` matches at any depth). " +
				"The workspace `.env` is never captured as a file: see `include_env`."},
		"include_env": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
			PlanModifiers: []planmodifier.Bool{boolplanmodifier.RequiresReplace()},
			MarkdownDescription: "Also capture the sandbox's env (its workspace `.env`). Values stay on the host (mode 0600) and never " +
				"enter Terraform state: only their names do, in the resource's `env_names`. Default `false`."},
		"metadata": schema.MapAttribute{Optional: true, ElementType: types.StringType,
			PlanModifiers:       []planmodifier.Map{mapplanmodifier.RequiresReplace()},
			MarkdownDescription: "Free-form key/value metadata, at most 10 KB."},
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
	}
}

func (r *SnapshotResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	keep := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	keepInt := []planmodifier.Int64{int64planmodifier.UseStateForUnknown()}
	attrs := captureAttributes()
	maps.Copy(attrs, map[string]schema.Attribute{
		"id": schema.StringAttribute{Computed: true, PlanModifiers: keep, MarkdownDescription: "Snapshot id, unique on its host."},
		"source_snapshot_id": schema.StringAttribute{Optional: true, PlanModifiers: replace, Validators: []validator.String{idValidator("snapshot")},
			MarkdownDescription: "Copy this snapshot instead of capturing a sandbox."},
		"retain_on_destroy": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
			MarkdownDescription: "Keep the snapshot on the host when the resource is destroyed. Changes in place."},
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
	})
	resp.Schema = schema.Schema{
		MarkdownDescription: "A checkpoint of a sandbox's workspace, kept in the content-addressed store on the sandbox's host " +
			"(`<root_dir>/.sandboxer/store`): a file that did not change since another snapshot is stored once. The source " +
			"sandbox keeps running. With `source_snapshot_id` instead of `sandbox_id`, a copy of another snapshot, on the same " +
			"host or replicated to `host`. Every argument but `retain_on_destroy` forces a new snapshot.",
		Attributes: attrs,
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Delete: true}),
		},
	}
}

func (r *SnapshotResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = hostIDIdentity("snapshot")
}

func (a *SnapshotAction) Schema(_ context.Context, _ action.SchemaRequest, resp *action.SchemaResponse) {
	resp.Schema = actionschema.Schema{
		MarkdownDescription: "Takes a checkpoint of a sandbox now, with the arguments of the `sandboxer_snapshot` resource. " +
			"The snapshot is kept in the host's store and listed by `sandboxer_snapshots` (restore it by its id), " +
			"but it is not managed in state: nothing destroys it. Reports the snapshot's id, size and digest. " +
			"Needs Terraform 1.14 or later.",
		Attributes: actionAttributes(captureAttributes(), "sandbox_id"),
	}
}

// snapshotFilter is what the snapshot lists (the list resource, the
// sandboxer_snapshots data source) filter on.
type snapshotFilter struct {
	SandboxID types.String `tfsdk:"sandbox_id"`
	Name      types.String `tfsdk:"name"`
}

// matches says whether a snapshot passes every filter given: the sandbox
// exactly, the name as a part.
func (f snapshotFilter) matches(s checkpoint.Summary) bool {
	if sb := f.SandboxID.ValueString(); sb != "" && s.SandboxID != sb {
		return false
	}
	return f.Name.ValueString() == "" || strings.Contains(s.Name, f.Name.ValueString())
}

// snapshotListModel is a sandboxer_snapshot list block.
type snapshotListModel struct {
	Host types.String `tfsdk:"host"`
	snapshotFilter
}

func (l *SnapshotListResource) ListResourceConfigSchema(_ context.Context, _ list.ListResourceSchemaRequest, resp *list.ListResourceSchemaResponse) {
	resp.Schema = listschema.Schema{
		MarkdownDescription: "Snapshots in the stores of the provider's hosts, oldest first, whoever took them (a " +
			"`sandboxer_snapshot` action's, a retained one's, another configuration's). Needs Terraform >= 1.14.",
		Attributes: map[string]listschema.Attribute{
			"host": listschema.StringAttribute{Optional: true,
				MarkdownDescription: "Host block name (or `local`) whose store to list. Default: every host of the provider."},
			"sandbox_id": listschema.StringAttribute{Optional: true, Validators: []validator.String{idValidator("sandbox")},
				MarkdownDescription: "Only snapshots of this sandbox."},
			"name": listschema.StringAttribute{Optional: true,
				MarkdownDescription: "Only snapshots whose name contains this (as `data.sandboxer_snapshots` filters)."},
		},
	}
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
	envNames, dd := types.ListValueFrom(ctx, types.StringType, nonNilList(s.EnvNames))
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
