package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/action"
	actionschema "github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

var (
	_ action.Action              = &ExtendAction{}
	_ action.ActionWithConfigure = &ExtendAction{}
)

// NewExtendAction is the action constructor.
func NewExtendAction() action.Action { return &ExtendAction{} }

// ExtendAction is the sandboxer_extend action: a sandbox's expiry pushed
// now, without a plan.
type ExtendAction struct {
	data *providerData
}

type extendModel struct {
	Host      types.String `tfsdk:"host"`
	SandboxID types.String `tfsdk:"sandbox_id"`
	By        types.String `tfsdk:"by"`
}

func (a *ExtendAction) Metadata(_ context.Context, req action.MetadataRequest, resp *action.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_extend"
}

func (a *ExtendAction) Schema(_ context.Context, _ action.SchemaRequest, resp *action.SchemaResponse) {
	resp.Schema = actionschema.Schema{
		MarkdownDescription: "Pushes a sandbox's `expires_at` now, in its host record, without a plan: a pipeline that needs its sandbox " +
			"longer than planned keeps it from the reaper. The new expiry is kept by later plans until the sandbox's `ttl` changes. " +
			"Metered sandboxes are quoted for their ttl: change the ttl instead. Needs Terraform >= 1.14.",
		Attributes: map[string]actionschema.Attribute{
			"host": actionschema.StringAttribute{Optional: true,
				MarkdownDescription: "The sandbox's host (found by asking the provider's hosts when unset)."},
			"sandbox_id": actionschema.StringAttribute{Required: true, Validators: []validator.String{idValidator("sandbox")},
				MarkdownDescription: "The sandbox to extend."},
			"by": actionschema.StringAttribute{Required: true, Validators: []validator.String{positiveDuration()},
				MarkdownDescription: "How much longer, e.g. `2h`: added to `expires_at`, or to now when that has passed."},
		},
	}
}

func (a *ExtendAction) Configure(_ context.Context, req action.ConfigureRequest, resp *action.ConfigureResponse) {
	a.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (a *ExtendAction) Invoke(ctx context.Context, req action.InvokeRequest, resp *action.InvokeResponse) {
	var m extendModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, defaultReadTimeout)
	defer cancel()
	by, _ := time.ParseDuration(m.By.ValueString()) // validated at plan time
	h, _, err := a.data.locateSandbox(ctx, m.SandboxID.ValueString(), m.Host.ValueString())
	if err != nil {
		resp.Diagnostics.AddError("Unable to Extend Sandbox", err.Error())
		return
	}
	sb, err := a.data.registry.Extend(ctx, h, m.SandboxID.ValueString(), by)
	if err != nil {
		resp.Diagnostics.AddError("Unable to Extend Sandbox", err.Error())
		return
	}
	resp.SendProgress(action.InvokeProgressEvent{Message: fmt.Sprintf("sandbox %s on host %q now expires at %s",
		sb.ID, h.Host(), sb.ExpiresAt.UTC().Format(time.RFC3339))})
}
