package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

var (
	_ datasource.DataSource              = &SnapshotDiffDataSource{}
	_ datasource.DataSourceWithConfigure = &SnapshotDiffDataSource{}
)

// NewSnapshotDiffDataSource is the data source constructor.
func NewSnapshotDiffDataSource() datasource.DataSource { return &SnapshotDiffDataSource{} }

// SnapshotDiffDataSource is sandboxer_snapshot_diff.
type SnapshotDiffDataSource struct {
	data *providerData
}

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

func (d *SnapshotDiffDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_snapshot_diff"
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

func (d *SnapshotDiffDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (d *SnapshotDiffDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m snapshotDiffModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	h, _, err := d.data.locateSnapshot(ctx, m.From.ValueString(), m.Host.ValueString())
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("from"), "Unable to Compare Snapshots", err.Error())
		return
	}
	diff, err := d.data.registry.DiffSnapshots(ctx, h, m.From.ValueString(), m.To.ValueString())
	if err != nil {
		resp.Diagnostics.AddError("Unable to Compare Snapshots",
			fmt.Sprintf("Snapshots %s and %s on host %q (both must be on the same host; copy one with source_snapshot_id): %v",
				m.From.ValueString(), m.To.ValueString(), h.Host(), err))
		return
	}
	m.Host = types.StringValue(h.Host())
	for _, f := range []struct {
		dst *types.List
		src []string
	}{
		{&m.FilesAdded, diff.FilesAdded}, {&m.FilesRemoved, diff.FilesRemoved}, {&m.FilesModified, diff.FilesModified},
		{&m.EnvAdded, diff.EnvAdded}, {&m.EnvRemoved, diff.EnvRemoved}, {&m.EnvModified, diff.EnvModified},
	} {
		v, diags := types.ListValueFrom(ctx, types.StringType, f.src)
		resp.Diagnostics.Append(diags...)
		*f.dst = v
	}
	m.SizeChangeBytes = types.Int64Value(diff.SizeChangeBytes)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
