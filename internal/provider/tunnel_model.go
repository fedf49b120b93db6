package provider

import (
	"context"
	"fmt"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/ephemeral"
	"github.com/hashicorp/terraform-plugin-framework/ephemeral/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// sandboxer_tunnel: the ephemeral resource's schema and model.

type tunnelModel struct {
	Host      types.String `tfsdk:"host"`
	SandboxID types.String `tfsdk:"sandbox_id"`
	Service   types.String `tfsdk:"service"`
	Port      types.Int64  `tfsdk:"port"`
	LocalPort types.Int64  `tfsdk:"local_port"`
	LocalHost types.String `tfsdk:"local_host"`
	Address   types.String `tfsdk:"address"`
}

// serviceNamePattern is compose's grammar of service names.
var serviceNamePattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]*$`)

func (r *TunnelEphemeralResource) Schema(_ context.Context, _ ephemeral.SchemaRequest, resp *ephemeral.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "A port on `127.0.0.1` of the machine running Terraform, relayed to a port of a compose sandbox's " +
			"service that publishes none (a database, an internal API), for as long as the run needs it: to configure another " +
			"provider or to run a `local-exec` provisioner against the service. Each connection goes over the host's pooled SSH " +
			"connection (a direct-tcpip channel, as `ssh -L` makes) to the service container's address on the sandbox's own " +
			"network; on a local host, straight to that address. One connection is made when the tunnel opens, so a service " +
			"that does not accept connections fails the run there. The tunnel closes when Terraform is done with it; nothing " +
			"of it is written to state or plan files. Needs Terraform 1.10 or later, or OpenTofu 1.11 or later.",
		Attributes: map[string]schema.Attribute{
			"host": schema.StringAttribute{Optional: true, Computed: true,
				MarkdownDescription: "The sandbox's host (found by asking the provider's hosts when unset)."},
			"sandbox_id": schema.StringAttribute{Required: true, Validators: []validator.String{idValidator("sandbox")},
				MarkdownDescription: "Compose sandbox whose service the tunnel reaches."},
			"service": schema.StringAttribute{Required: true,
				Validators: []validator.String{stringvalidator.RegexMatches(serviceNamePattern,
					"must be a compose service name: letters, digits, '.', '_' and '-', starting with a letter or digit")},
				MarkdownDescription: "Name of the service in the compose file. It must be running."},
			"port": schema.Int64Attribute{Required: true, Validators: []validator.Int64{int64validator.Between(1, 65535)},
				MarkdownDescription: "Port the service listens on inside its container (no `ports:` entry needed)."},
			"local_port": schema.Int64Attribute{Optional: true, Computed: true, Validators: []validator.Int64{localPortValidator{}},
				MarkdownDescription: "Port to listen on at `127.0.0.1`. Unset (the default): a free port, chosen when the tunnel " +
					"opens; the result holds the port chosen."},
			"local_host": schema.StringAttribute{Computed: true,
				MarkdownDescription: "Address the tunnel listens on: always `127.0.0.1`."},
			"address": schema.StringAttribute{Computed: true,
				MarkdownDescription: "`127.0.0.1:<local_port>`, ready for a client's `host:port` argument."},
		},
	}
}

// localPortValidator holds local_port to 1-65535. A free port is asked for
// by leaving it unset, not by 0: Terraform requires a configured value back
// unchanged, and the result must say which port the tunnel took.
type localPortValidator struct{}

func (localPortValidator) Description(context.Context) string {
	return "must be a TCP port, 1-65535; unset for a free port"
}

func (v localPortValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (localPortValidator) ValidateInt64(_ context.Context, req validator.Int64Request, resp *validator.Int64Response) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	switch p := req.ConfigValue.ValueInt64(); {
	case p == 0:
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Local Port",
			"local_port = 0 cannot be set: leave local_port unset for a free port (the result then holds the port the tunnel took).")
	case p < 1 || p > 65535:
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Local Port", fmt.Sprintf("local_port %d is not a TCP port (1-65535).", p))
	}
}
