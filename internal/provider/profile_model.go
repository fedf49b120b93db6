package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// sandboxer_profile: the data source's schema and model.

type profileModel struct {
	Name              types.String  `tfsdk:"name"`
	Version           types.String  `tfsdk:"version"`
	Description       types.String  `tfsdk:"description"`
	Extension         types.String  `tfsdk:"extension"`
	ExtensionKind     types.String  `tfsdk:"extension_kind"`
	Fallback          types.String  `tfsdk:"fallback"`
	Placement         types.List    `tfsdk:"placement"`
	TTL               types.String  `tfsdk:"ttl"`
	SupportsSnapshots types.Bool    `tfsdk:"supports_snapshots"`
	Inputs            types.List    `tfsdk:"inputs"`
	RequiredInputs    types.List    `tfsdk:"required_inputs"`
	HourlyPriceUSD    types.Float64 `tfsdk:"hourly_price_usd"`
	Settings          types.Map     `tfsdk:"settings"`
	Source            types.String  `tfsdk:"source"`
}

var inputType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"name": types.StringType, "required": types.BoolType, "description": types.StringType,
}}

func (d *ProfileDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	computed := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Reads a profile from the provider's catalog: the built-ins, or a file in `profiles_dir` (which replaces a built-in of the same name; `source` says which).",
		Attributes: map[string]schema.Attribute{
			"name":           schema.StringAttribute{Required: true, MarkdownDescription: "Profile name, e.g. `profile.compose-e2e`."},
			"version":        computed("Profile version."),
			"description":    computed("What the profile gives."),
			"extension":      computed("Extension that serves it."),
			"extension_kind": computed("`self-hosted` or `metered`."),
			"fallback":       computed("Extension routing falls back to when the metered one cannot serve (empty when none)."),
			"placement": schema.ListAttribute{Computed: true, ElementType: types.StringType,
				MarkdownDescription: "Host names in order of preference."},
			"ttl": computed("Default lifetime (empty when none)."),
			"supports_snapshots": schema.BoolAttribute{Computed: true,
				MarkdownDescription: "Whether its extension can snapshot and restore."},
			"inputs": schema.ListAttribute{Computed: true, ElementType: inputType,
				MarkdownDescription: "Declared inputs: `name`, `required`, `description`."},
			"required_inputs": schema.ListAttribute{Computed: true, ElementType: types.StringType,
				MarkdownDescription: "Names of the required inputs."},
			"hourly_price_usd": schema.Float64Attribute{Computed: true, MarkdownDescription: "Hourly price of a metered profile (0 for self-hosted)."},
			"settings": schema.MapAttribute{Computed: true, ElementType: types.StringType,
				MarkdownDescription: "Extension settings, e.g. `workspace_base` or the canary `image`."},
			"source": computed("`built-in`, or the path of the file the profile was read from."),
		},
	}
}
