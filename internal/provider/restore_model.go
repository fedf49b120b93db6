package provider

import (
	"context"
	"maps"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/action"
	actionschema "github.com/hashicorp/terraform-plugin-framework/action/schema"
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
)

// sandboxer_restore: the schemas of the resource and the action, and their
// models.

// restoreInPlaceArgs are the arguments of a restore into an existing
// sandbox: the action's model, and part of the resource's.
type restoreInPlaceArgs struct {
	SnapshotID      types.String `tfsdk:"snapshot_id"`
	TargetSandboxID types.String `tfsdk:"target_sandbox_id"`
	Host            types.String `tfsdk:"host"`
	RestoreFiles    types.Bool   `tfsdk:"restore_files"`
	RestoreEnv      types.Bool   `tfsdk:"restore_env"`
	Overwrite       types.Bool   `tfsdk:"overwrite"`
	Prune           types.Bool   `tfsdk:"prune"`
}

// restoreModel is the sandboxer_restore resource's data.
type restoreModel struct {
	restoreInPlaceArgs
	ID            types.String   `tfsdk:"id"`
	Profile       types.String   `tfsdk:"profile"`
	Inputs        types.Map      `tfsdk:"inputs"`
	Triggers      types.Map      `tfsdk:"triggers"`
	SandboxID     types.String   `tfsdk:"sandbox_id"`
	WorkspaceDir  types.String   `tfsdk:"workspace_dir"`
	Endpoints     types.Map      `tfsdk:"endpoints"`
	FilesRestored types.Int64    `tfsdk:"files_restored"`
	RestoredAt    types.String   `tfsdk:"restored_at"`
	Timeouts      timeouts.Value `tfsdk:"timeouts"`
}

func (m *restoreModel) inPlace() bool { return m.TargetSandboxID.ValueString() != "" }

// restoreInPlaceAttributes are the arguments of a restore in place as the
// resource takes them; the action takes the same ones (actionAttributes).
// The resource's defaults are the action's too (restoreInPlaceArgs.options).
func restoreInPlaceAttributes() map[string]schema.Attribute {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	replaceBool := []planmodifier.Bool{boolplanmodifier.RequiresReplace()}
	return map[string]schema.Attribute{
		"snapshot_id": schema.StringAttribute{Required: true, PlanModifiers: replace, Validators: []validator.String{idValidator("snapshot")},
			MarkdownDescription: "Snapshot to restore (found on the provider's hosts)."},
		"target_sandbox_id": schema.StringAttribute{Optional: true, PlanModifiers: replace, Validators: []validator.String{idValidator("sandbox")},
			MarkdownDescription: "In place: the sandbox rolled back to the snapshot."},
		"host": schema.StringAttribute{Optional: true, Computed: true,
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown(), stringplanmodifier.RequiresReplace()},
			MarkdownDescription: "In place: the target sandbox's host (found by asking the provider's hosts when unset). " +
				"New sandbox (the resource without `target_sandbox_id`): where it is created (default: the snapshot's host; " +
				"another host gets the snapshot's missing objects transferred first)."},
		"restore_files": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true), PlanModifiers: replaceBool,
			MarkdownDescription: "In place: restore files. Default `true`."},
		"restore_env": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true), PlanModifiers: replaceBool,
			MarkdownDescription: "In place: restore the captured env as the workspace `.env`. Default `true`."},
		"overwrite": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true), PlanModifiers: replaceBool,
			MarkdownDescription: "In place: files present in both take the snapshot's content (`true`, default) or are kept (`false`)."},
		"prune": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false), PlanModifiers: replaceBool,
			MarkdownDescription: "In place: remove files inside the snapshot's scope that the snapshot does not have, so the scope equals the snapshot exactly. Default `false`."},
	}
}

func (r *RestoreResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	keep := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	attrs := restoreInPlaceAttributes()
	maps.Copy(attrs, map[string]schema.Attribute{
		"id": schema.StringAttribute{Computed: true, PlanModifiers: keep, MarkdownDescription: "Id of this restore."},
		"profile": schema.StringAttribute{Optional: true, PlanModifiers: replace,
			MarkdownDescription: "New sandbox: its profile. Default: the profile of the snapshot's sandbox."},
		"inputs": schema.MapAttribute{Optional: true, ElementType: types.StringType,
			PlanModifiers:       []planmodifier.Map{mapplanmodifier.RequiresReplace()},
			MarkdownDescription: "New sandbox: profile inputs. A `repo` is copied first and the snapshot written over it."},
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
	})
	resp.Schema = schema.Schema{
		Version: restoreSchemaVersion, // states of earlier versions: UpgradeState
		MarkdownDescription: "Restores a snapshot, in one of two modes. **New sandbox** (default): a sandbox is created whose " +
			"workspace is populated from the snapshot before it starts, then waited ready; the source sandbox is never " +
			"touched; destroying this resource tears the new sandbox down. **In place** (`target_sandbox_id`): the " +
			"snapshot is written into an existing sandbox, whose compose services are stopped around the write and " +
			"started and waited ready after; destroying this resource leaves the target alone. Every object is verified " +
			"against its digest before anything is written. The restore runs on create and again only when an argument " +
			"or `triggers` changes.",
		Attributes: attrs,
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Delete: true}),
		},
	}
}

func (a *RestoreAction) Schema(_ context.Context, _ action.SchemaRequest, resp *action.SchemaResponse) {
	resp.Schema = actionschema.Schema{
		MarkdownDescription: "Restores a snapshot into an existing sandbox now, in place, as the `sandboxer_restore` resource " +
			"with `target_sandbox_id` does on create: its compose services are stopped, every object is verified against " +
			"its digest, files (and the captured `.env`) are written, and the services are started and waited ready. " +
			"The one-shot form; the resource stays for declarative restores. Needs Terraform 1.14 or later.",
		Attributes: actionAttributes(restoreInPlaceAttributes(), "target_sandbox_id"),
	}
}
