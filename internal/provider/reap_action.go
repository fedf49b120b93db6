package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/path"
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

func (a *ReapAction) Metadata(_ context.Context, req action.MetadataRequest, resp *action.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_reap"
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
	h, err := a.data.hostOrDefault(m.Host.ValueString())
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("host"), "Unknown Host", err.Error())
		return
	}
	name := h.Host()
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
