package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// sandboxer_reap: the action's schema and model.

type reapModel struct {
	Host types.String `tfsdk:"host"`
}

func (a *ReapAction) Schema(_ context.Context, _ action.SchemaRequest, resp *action.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Runs the reaper on a host now: removes the sandboxes of the host's root directory whose " +
			"`expires_at` has passed, and abandoned creates (never ready, their create deadline passed), exactly as the " +
			"reaper `reaper = true` schedules every minute does, whether or not it is installed there. Reports each " +
			"sandbox it removed. Nothing else on the host is written. Needs Terraform 1.14 or later.",
		Attributes: map[string]schema.Attribute{
			"host": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Host to reap. Default: the provider's `default_host`, else `local`."},
		},
	}
}
