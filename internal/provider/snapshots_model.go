package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// sandboxer_snapshots: the data source's schema and model.

type snapshotsModel struct {
	Host types.String `tfsdk:"host"`
	snapshotFilter
	Snapshots types.List `tfsdk:"snapshots"`
}

var snapshotItemType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"id":          types.StringType,
	"host":        types.StringType,
	"name":        types.StringType,
	"description": types.StringType,
	"sandbox_id":  types.StringType,
	"created_at":  types.StringType,
	"size_bytes":  types.Int64Type,
	"file_count":  types.Int64Type,
	"digest":      types.StringType,
	"metadata":    types.MapType{ElemType: types.StringType},
}}

func (d *SnapshotsDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Lists the snapshots kept on the provider's hosts, oldest first, read from each host's store.",
		Attributes: map[string]schema.Attribute{
			"host": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Only this host. Default: every host the provider declares (each must be reachable)."},
			"sandbox_id": schema.StringAttribute{Optional: true, Validators: []validator.String{idValidator("sandbox")}, MarkdownDescription: "Only snapshots of this sandbox."},
			"name":       schema.StringAttribute{Optional: true, MarkdownDescription: "Only snapshots whose name contains this text."},
			"snapshots": schema.ListAttribute{Computed: true, ElementType: snapshotItemType,
				MarkdownDescription: "The snapshots: `id`, `host`, `name`, `description`, `sandbox_id`, `created_at`, `size_bytes`, `file_count`, `digest`, `metadata`."},
		},
	}
}
