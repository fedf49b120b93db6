package provider

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
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

type snapshotsModel struct {
	Host      types.String `tfsdk:"host"`
	SandboxID types.String `tfsdk:"sandbox_id"`
	Name      types.String `tfsdk:"name"`
	Snapshots types.List   `tfsdk:"snapshots"`
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

func (d *SnapshotsDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_snapshots"
}

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
		list, err := d.data.registry.ListSnapshots(ctx, h)
		if err != nil {
			resp.Diagnostics.AddError("Unable to List Snapshots", fmt.Sprintf("Host %q: %v", h.Host(), err))
			return
		}
		sort.SliceStable(list, func(i, j int) bool { return list[i].CreatedAt.Before(list[j].CreatedAt) })
		for _, s := range list {
			if sb := m.SandboxID.ValueString(); sb != "" && s.SandboxID != sb {
				continue
			}
			if n := m.Name.ValueString(); n != "" && !strings.Contains(s.Name, n) {
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

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
