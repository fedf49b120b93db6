package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

var (
	_ datasource.DataSource              = &SnapshotsDataSource{}
	_ datasource.DataSourceWithConfigure = &SnapshotsDataSource{}
)

// NewSnapshotsDataSource is the data source constructor.
func NewSnapshotsDataSource() datasource.DataSource { return &SnapshotsDataSource{} }

// SnapshotsDataSource is sandboxer_snapshots.
type SnapshotsDataSource struct {
	data *providerData
}

func (d *SnapshotsDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_snapshots"
}

func (d *SnapshotsDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (d *SnapshotsDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m snapshotsModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	targets := d.data.searchOrder()
	if name := m.Host.ValueString(); name != "" {
		h, err := d.data.host(name)
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("host"), "Unknown Host", err.Error())
			return
		}
		targets = []*hosts.Host{h}
	}
	items := []attr.Value{}
	for _, h := range targets {
		list, err := d.data.snapshotsOldestFirst(ctx, h)
		if err != nil {
			resp.Diagnostics.AddError("Unable to List Snapshots", fmt.Sprintf("Host %q: %v", h.Host(), err))
			return
		}
		for _, s := range list {
			if !m.matches(s) {
				continue
			}
			meta, diags := types.MapValueFrom(ctx, types.StringType, nonNilMap(s.Metadata))
			resp.Diagnostics.Append(diags...)
			items = append(items, types.ObjectValueMust(snapshotItemType.AttrTypes, map[string]attr.Value{
				"id": types.StringValue(s.ID), "host": types.StringValue(h.Host()), "name": types.StringValue(s.Name),
				"description": types.StringValue(s.Description), "sandbox_id": types.StringValue(s.SandboxID),
				"created_at": types.StringValue(s.CreatedAt.UTC().Format(time.RFC3339)),
				"size_bytes": types.Int64Value(s.SizeBytes), "file_count": types.Int64Value(int64(s.FileCount)),
				"digest": types.StringValue(s.Digest), "metadata": meta,
			}))
		}
	}
	m.Snapshots = types.ListValueMust(snapshotItemType, items)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
