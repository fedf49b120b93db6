package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
)

var (
	_ action.Action              = &ReapAction{}
	_ action.ActionWithConfigure = &ReapAction{}
)

// NewReapAction is the action constructor.
func NewReapAction() action.Action { return &ReapAction{} }

// ReapAction is the sandboxer_reap action: run a host's reaper now.
type ReapAction struct {
	data *providerData
}

type reapModel struct {
	Host types.String `tfsdk:"host"`
}

func (a *ReapAction) Metadata(_ context.Context, req action.MetadataRequest, resp *action.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_reap"
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

func (a *ReapAction) Configure(_ context.Context, req action.ConfigureRequest, resp *action.ConfigureResponse) {
	a.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (a *ReapAction) Invoke(ctx context.Context, req action.InvokeRequest, resp *action.InvokeResponse) {
	var m reapModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	name := m.Host.ValueString()
	if name == "" {
		name = a.data.defaultHost
	}
	if name == "" {
		name = catalog.LocalHost
	}
	h, err := a.data.host(name)
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("host"), "Unknown Host", err.Error())
		return
	}
	ids, err := a.data.registry.Reap(ctx, h)
	if err != nil {
		resp.Diagnostics.AddError("Unable to Reap", err.Error())
		return
	}
	for _, id := range ids {
		resp.SendProgress(action.InvokeProgressEvent{Message: fmt.Sprintf("reaped sandbox %s on host %q", id, name)})
	}
	if len(ids) == 0 {
		resp.SendProgress(action.InvokeProgressEvent{Message: fmt.Sprintf("nothing to reap on host %q", name)})
	} else {
		resp.SendProgress(action.InvokeProgressEvent{Message: fmt.Sprintf("reaped %d sandbox(es) on host %q: %s", len(ids), name, strings.Join(ids, ", "))})
	}
}
