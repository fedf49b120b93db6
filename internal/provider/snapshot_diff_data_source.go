package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/path"
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

func (d *SnapshotDiffDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_snapshot_diff"
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
