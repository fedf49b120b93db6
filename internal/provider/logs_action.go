package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework/action"
	actionschema "github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

var (
	_ action.Action                   = &LogsAction{}
	_ action.ActionWithConfigure      = &LogsAction{}
	_ action.ActionWithValidateConfig = &LogsAction{}
)

// NewLogsAction is the action constructor.
func NewLogsAction() action.Action { return &LogsAction{} }

// LogsAction is the sandboxer_logs action: a sandbox's logs as progress.
type LogsAction struct {
	data *providerData
}

type logsModel struct {
	Host      types.String `tfsdk:"host"`
	SandboxID types.String `tfsdk:"sandbox_id"`
	Services  types.List   `tfsdk:"services"`
	Tail      types.Int64  `tfsdk:"tail"`
	Since     types.String `tfsdk:"since"`
}

// defaultLogsTail is tail's default: enough to see a failure, short enough
// to read.
const defaultLogsTail = 100

func (a *LogsAction) Metadata(_ context.Context, req action.MetadataRequest, resp *action.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_logs"
}

func (a *LogsAction) Schema(_ context.Context, _ action.SchemaRequest, resp *action.SchemaResponse) {
	resp.Schema = actionschema.Schema{
		MarkdownDescription: "Shows a sandbox's logs as progress, each line prefixed with its service (`web | ...`), service by service: " +
			"for a pipeline whose tests failed (`action_trigger` on a failure, or `terraform apply -invoke`). Writes nothing to state. " +
			"Reads every container of a service, running or exited. Needs Terraform >= 1.14.",
		Attributes: map[string]actionschema.Attribute{
			"host": actionschema.StringAttribute{Optional: true,
				MarkdownDescription: "The sandbox's host (found by asking the provider's hosts when unset)."},
			"sandbox_id": actionschema.StringAttribute{Required: true, Validators: []validator.String{idValidator("sandbox")},
				MarkdownDescription: "The sandbox whose logs to show."},
			"services": actionschema.ListAttribute{Optional: true, ElementType: types.StringType,
				MarkdownDescription: "The services to show, in this order. Default: every service, by name."},
			"tail": actionschema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.AtLeast(0)},
				MarkdownDescription: fmt.Sprintf("Lines per container, from the end (default %d; 0: all).", defaultLogsTail)},
			"since": actionschema.StringAttribute{Optional: true,
				MarkdownDescription: "Only lines since then: a duration such as `10m`, or an RFC 3339 time."},
		},
	}
}

func (a *LogsAction) Configure(_ context.Context, req action.ConfigureRequest, resp *action.ConfigureResponse) {
	a.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

// ValidateConfig checks since at plan time.
func (a *LogsAction) ValidateConfig(ctx context.Context, req action.ValidateConfigRequest, resp *action.ValidateConfigResponse) {
	var m logsModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if m.Since.IsUnknown() {
		return
	}
	if err := backends.CheckSince(m.Since.ValueString()); err != nil {
		resp.Diagnostics.AddError("Invalid Since", err.Error())
	}
}

func (a *LogsAction) Invoke(ctx context.Context, req action.InvokeRequest, resp *action.InvokeResponse) {
	var m logsModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, defaultReadTimeout)
	defer cancel()
	lreq := backends.LogsRequest{SandboxID: m.SandboxID.ValueString(), Tail: defaultLogsTail, Since: m.Since.ValueString()}
	if !m.Tail.IsNull() {
		lreq.Tail = int(m.Tail.ValueInt64())
	}
	resp.Diagnostics.Append(m.Services.ElementsAs(ctx, &lreq.Services, true)...)
	if resp.Diagnostics.HasError() {
		return
	}
	lines := &progressLines{send: func(line string) { resp.SendProgress(action.InvokeProgressEvent{Message: line}) }}
	lreq.Out = lines
	var err error
	if c, ok := a.data.cluster(m.Host.ValueString()); ok {
		err = a.data.kube.Logs(ctx, c, lreq)
	} else {
		var h *hosts.Host
		if h, _, err = a.data.locateSandbox(ctx, lreq.SandboxID, m.Host.ValueString()); err == nil {
			err = a.data.registry.Logs(ctx, h, lreq)
		}
	}
	lines.flush()
	if err != nil {
		resp.Diagnostics.AddError("Unable to Read Logs", err.Error())
	}
}
