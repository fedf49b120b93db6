package provider

import (
	"context"
	"net"
	"strconv"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
)

// sandboxModel is the sandboxer_sandbox resource's data.
type sandboxModel struct {
	ID               types.String   `tfsdk:"id"`
	Profile          types.String   `tfsdk:"profile"`
	Host             types.String   `tfsdk:"host"`
	HostPool         types.String   `tfsdk:"host_pool"`
	HostLabels       types.Map      `tfsdk:"host_labels"`
	Inputs           types.Map      `tfsdk:"inputs"`
	Env              types.Map      `tfsdk:"env"`
	EnvWO            types.Map      `tfsdk:"env_wo"` // write-only: always null here but in the config
	EnvWOVersion     types.Int64    `tfsdk:"env_wo_version"`
	Labels           types.Map      `tfsdk:"labels"`
	Extension        types.String   `tfsdk:"extension"`
	Status           types.String   `tfsdk:"status"`
	WorkspaceDir     types.String   `tfsdk:"workspace_dir"`
	ComposeProject   types.String   `tfsdk:"compose_project"`
	Services         types.List     `tfsdk:"services"`
	SourceHash       types.String   `tfsdk:"source_hash"`
	CreatedAt        types.String   `tfsdk:"created_at"`
	ReadyAt          types.String   `tfsdk:"ready_at"`
	TTL              types.String   `tfsdk:"ttl"`
	ExpiresAt        types.String   `tfsdk:"expires_at"`
	EstimatedCostUSD types.Float64  `tfsdk:"estimated_cost_usd"`
	PublishedPorts   types.String   `tfsdk:"published_ports"`
	WaitForPorts     types.Bool     `tfsdk:"wait_for_ports"`
	Endpoints        types.Map      `tfsdk:"endpoints"`
	Timeouts         timeouts.Value `tfsdk:"timeouts"`
}

var portType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"target":    types.Int64Type,
	"protocol":  types.StringType,
	"host_ip":   types.StringType,
	"published": types.Int64Type,
	"address":   types.StringType,
}}

var serviceType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"name":  types.StringType,
	"state": types.StringType,
	"ports": types.ListType{ElemType: portType},
}}

// reach is where a sandbox's services are reached from outside its host:
// each service's ports, and the endpoints map of them all.
type reach struct {
	services  types.List
	endpoints types.Map
}

// reachOf turns services as seen on a host into state. A port published
// on all interfaces is reached at the host's endpoint host; one bound to
// an address, at that address.
func reachOf(services []backends.ServiceState, endpointHost string) reach {
	list := make([]attr.Value, 0, len(services))
	endpoints := map[string]attr.Value{}
	for _, s := range services {
		ports := make([]attr.Value, 0, len(s.Ports))
		for _, p := range s.Ports {
			host := endpointHost
			if p.HostIP != "" && p.HostIP != "0.0.0.0" && p.HostIP != "::" {
				host = p.HostIP
			}
			address := net.JoinHostPort(host, strconv.Itoa(p.Published))
			ports = append(ports, types.ObjectValueMust(portType.AttrTypes, map[string]attr.Value{
				"target": types.Int64Value(int64(p.Target)), "protocol": types.StringValue(p.Protocol),
				"host_ip": types.StringValue(p.HostIP), "published": types.Int64Value(int64(p.Published)),
				"address": types.StringValue(address),
			}))
			key := backends.EndpointKey(s.Name, p.Target, p.Protocol)
			if _, seen := endpoints[key]; !seen { // sorted: IPv4's wildcard before an address
				endpoints[key] = types.StringValue(address)
			}
		}
		list = append(list, types.ObjectValueMust(serviceType.AttrTypes, map[string]attr.Value{
			"name": types.StringValue(s.Name), "state": types.StringValue(s.State),
			"ports": types.ListValueMust(portType, ports),
		}))
	}
	return reach{services: types.ListValueMust(serviceType, list), endpoints: types.MapValueMust(types.StringType, endpoints)}
}

// fromBackend fills the model from what the host says: the one place Create,
// Read and Import turn a record and its live status into state.
func (m *sandboxModel) fromBackend(ctx context.Context, sb *backends.Sandbox, st backends.Status, endpointHost string) diag.Diagnostics {
	var diags diag.Diagnostics
	m.ID = types.StringValue(sb.ID)
	m.Host = types.StringValue(sb.Host)
	m.Profile = types.StringValue(sb.Profile)
	m.Extension = types.StringValue(sb.Extension)
	m.Status = types.StringValue(st.State)
	m.WorkspaceDir = types.StringValue(sb.WorkspaceDir)
	m.ComposeProject = stringOrNull(sb.ComposeProject)
	m.SourceHash = stringOrNull(sb.SourceHash)
	m.CreatedAt = types.StringValue(sb.CreatedAt.UTC().Format(time.RFC3339))
	if sb.ReadyAt != nil {
		m.ReadyAt = types.StringValue(sb.ReadyAt.UTC().Format(time.RFC3339))
	} else {
		m.ReadyAt = types.StringNull()
	}

	m.ExpiresAt = types.StringNull()
	if sb.ExpiresAt != nil {
		m.ExpiresAt = types.StringValue(sb.ExpiresAt.UTC().Format(time.RFC3339))
		if m.TTL.IsNull() { // import: the lifetime as the host records it
			m.TTL = types.StringValue(sb.TTL)
			if sb.TTL == "" {
				m.TTL = types.StringValue(backends.FormatTTL(sb.ExpiresAt.Sub(sb.CreatedAt)))
			}
		}
	}
	m.EstimatedCostUSD = types.Float64Null()
	if sb.QuoteUSD > 0 {
		m.EstimatedCostUSD = types.Float64Value(sb.QuoteUSD)
	}

	// An empty map from the host keeps a null in state, so a config that
	// omits inputs/labels shows no diff.
	m.Inputs = mapFromHost(ctx, m.Inputs, sb.Inputs, &diags)
	m.Labels = mapFromHost(ctx, m.Labels, sb.Labels, &diags)

	// Arguments that shape a create: a state without them (an import)
	// takes them from the record. A record from before published_ports
	// (0.2.0, whose compose file runs as written) reads as "free", what a
	// configuration without the argument plans, as the state upgrader
	// makes a 0.2.0 state say (state_upgrade.go): an upgrade or an import
	// replaces nothing.
	if m.PublishedPorts.IsNull() || m.PublishedPorts.IsUnknown() {
		m.PublishedPorts = types.StringValue(backends.PortsFree)
		if sb.PublishedPorts == backends.PortsAsWritten {
			m.PublishedPorts = types.StringValue(sb.PublishedPorts)
		}
	}
	if m.WaitForPorts.IsNull() || m.WaitForPorts.IsUnknown() {
		m.WaitForPorts = types.BoolValue(sb.WaitForPorts)
	}

	r := reachOf(st.Services, endpointHost)
	m.Services, m.Endpoints = r.services, r.endpoints
	return diags
}

func stringOrNull(s string) types.String {
	if s == "" {
		return types.StringNull()
	}
	return types.StringValue(s)
}

// mapFromHost converts a map read from the host. An empty map keeps the
// current value's form (null or {}), so a config that omits the attribute
// and one that writes {} both show no diff.
func mapFromHost(ctx context.Context, current types.Map, m map[string]string, diags *diag.Diagnostics) types.Map {
	if len(m) == 0 {
		if !current.IsNull() && !current.IsUnknown() && len(current.Elements()) == 0 {
			return current
		}
		return types.MapNull(types.StringType)
	}
	v, d := types.MapValueFrom(ctx, types.StringType, m)
	diags.Append(d...)
	return v
}

// stringMap reads a map attribute; null and unknown read as empty.
func stringMap(ctx context.Context, v types.Map, diags *diag.Diagnostics) map[string]string {
	out := map[string]string{}
	if v.IsNull() || v.IsUnknown() {
		return out
	}
	diags.Append(v.ElementsAs(ctx, &out, false)...)
	return out
}

// listFromHost converts a string list read from the host, keeping the
// current value's form when both are empty (as mapFromHost does).
func listFromHost(ctx context.Context, current types.List, l []string, diags *diag.Diagnostics) types.List {
	if len(l) == 0 {
		if !current.IsNull() && !current.IsUnknown() && len(current.Elements()) == 0 {
			return current
		}
		return types.ListNull(types.StringType)
	}
	v, d := types.ListValueFrom(ctx, types.StringType, l)
	diags.Append(d...)
	return v
}

// stringList reads a list attribute; null and unknown read as empty.
func stringList(ctx context.Context, v types.List, diags *diag.Diagnostics) []string {
	var out []string
	if v.IsNull() || v.IsUnknown() {
		return out
	}
	diags.Append(v.ElementsAs(ctx, &out, false)...)
	return out
}

// failedCreate makes a planned sandbox whose create failed and whose cleanup
// failed too storable: its id, and null for what only the host could say.
func (m *sandboxModel) failedCreate(id string) {
	m.ID = types.StringValue(id)
	m.Status = types.StringValue(backends.StatusMissing)
	for _, v := range []*types.String{&m.WorkspaceDir, &m.ComposeProject, &m.CreatedAt, &m.ReadyAt, &m.ExpiresAt} {
		if v.IsUnknown() {
			*v = types.StringNull()
		}
	}
	m.Services = types.ListNull(serviceType) // planned names carry unknown states
	if m.SourceHash.IsUnknown() {
		m.SourceHash = types.StringNull()
	}
}
