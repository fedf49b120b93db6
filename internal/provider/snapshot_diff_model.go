package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// sandboxer_snapshot_diff: the data source's schema and model.

type snapshotDiffModel struct {
	From            types.String `tfsdk:"from"`
	To              types.String `tfsdk:"to"`
	Host            types.String `tfsdk:"host"`
	FilesAdded      types.List   `tfsdk:"files_added"`
	FilesRemoved    types.List   `tfsdk:"files_removed"`
	FilesModified   types.List   `tfsdk:"files_modified"`
	EnvAdded        types.List   `tfsdk:"env_added"`
	EnvRemoved      types.List   `tfsdk:"env_removed"`
	EnvModified     types.List   `tfsdk:"env_modified"`
	SizeChangeBytes types.Int64  `tfsdk:"size_change_bytes"`
}

func (d *SnapshotDiffDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	list := func(desc string) schema.ListAttribute {
		return schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Compares two snapshots on the host that holds them: which files were added, removed or " +
			"modified (content, mode, owner or link target), and which env variables — by name only, values are secret. " +
			"Files of a snapshot's named volumes are reported as `volume:<name>/<path>`.",
		Attributes: map[string]schema.Attribute{
			"from": schema.StringAttribute{Required: true, Validators: []validator.String{idValidator("snapshot")}, MarkdownDescription: "The earlier snapshot's id."},
			"to":   schema.StringAttribute{Required: true, Validators: []validator.String{idValidator("snapshot")}, MarkdownDescription: "The later snapshot's id."},
			"host": schema.StringAttribute{Optional: true, Computed: true,
				MarkdownDescription: "Host holding both snapshots. Default: found by asking the provider's hosts."},
			"files_added":       list("Paths in `to` only."),
			"files_removed":     list("Paths in `from` only."),
			"files_modified":    list("Paths in both whose content, mode, type or link target differ."),
			"env_added":         list("Env names in `to` only."),
			"env_removed":       list("Env names in `from` only."),
			"env_modified":      list("Env names whose value differs (values are never shown)."),
			"size_change_bytes": schema.Int64Attribute{Computed: true, MarkdownDescription: "`to`'s size minus `from`'s."},
		},
	}
}
