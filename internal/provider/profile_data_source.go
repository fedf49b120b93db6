package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

var (
	_ datasource.DataSource              = &ProfileDataSource{}
	_ datasource.DataSourceWithConfigure = &ProfileDataSource{}
)

// NewProfileDataSource is the data source constructor.
func NewProfileDataSource() datasource.DataSource { return &ProfileDataSource{} }

// ProfileDataSource is sandboxer_profile.
type ProfileDataSource struct {
	data *providerData
}

func (d *ProfileDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_profile"
}

func (d *ProfileDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (d *ProfileDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m profileModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	p, err := d.data.catalog.Get(m.Name.ValueString())
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("name"), "Unknown Profile", err.Error())
		return
	}
	decl, err := d.data.catalog.Extension(p.Extension)
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("name"), "Unknown Extension", err.Error())
		return
	}
	_, snapErr := d.data.registry.Snapshotter(p.Name, p.Extension)
	m.Version = types.StringValue(p.Version)
	m.Description = types.StringValue(p.Description)
	m.Extension = types.StringValue(p.Extension)
	m.ExtensionKind = types.StringValue(decl.Kind)
	m.Fallback = types.StringValue(p.Fallback)
	m.TTL = types.StringValue(p.TTL)
	m.SupportsSnapshots = types.BoolValue(snapErr == nil)
	m.HourlyPriceUSD = types.Float64Value(p.HourlyPriceUSD)
	m.Source = types.StringValue(p.Source)
	placement := p.Placement
	if placement == nil {
		placement = []string{}
	}
	var diags = &resp.Diagnostics
	v, dd := types.ListValueFrom(ctx, types.StringType, placement)
	diags.Append(dd...)
	m.Placement = v
	inputs := []attr.Value{}
	required := []string{}
	for _, in := range p.Inputs {
		inputs = append(inputs, types.ObjectValueMust(inputType.AttrTypes, map[string]attr.Value{
			"name": types.StringValue(in.Name), "required": types.BoolValue(in.Required), "description": types.StringValue(in.Description),
		}))
		if in.Required {
			required = append(required, in.Name)
		}
	}
	m.Inputs = types.ListValueMust(inputType, inputs)
	v, dd = types.ListValueFrom(ctx, types.StringType, required)
	diags.Append(dd...)
	m.RequiredInputs = v
	settings, dd := types.MapValueFrom(ctx, types.StringType, nonNilMap(p.Settings))
	diags.Append(dd...)
	m.Settings = settings
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
