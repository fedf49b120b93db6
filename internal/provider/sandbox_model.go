package provider

import (
	"context"
	"maps"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	listschema "github.com/hashicorp/terraform-plugin-framework/list/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
)

// sandboxer_sandbox: the resource's and the list resource's schemas, their
// models, and how a sandbox on a host becomes state.

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
	DesiredState     types.String   `tfsdk:"desired_state"`
	OnExpiry         types.String   `tfsdk:"on_expiry"`
	Policy           types.String   `tfsdk:"policy"`
	Timings          types.Map      `tfsdk:"timings"`
	Timeouts         timeouts.Value `tfsdk:"timeouts"`
}

func (r *SandboxResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	stable := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	resp.Schema = schema.Schema{
		Version: sandboxSchemaVersion, // states of earlier versions: UpgradeState
		MarkdownDescription: "A sandbox: an isolated workspace or docker-compose stack on a host, up and ready when apply " +
			"finishes, torn down completely on destroy. The host keeps a record of it, so drift is detected and " +
			"`terraform import` works from the host alone.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, PlanModifiers: stable,
				MarkdownDescription: "Sandbox id, unique on its host."},
			"profile": schema.StringAttribute{Required: true,
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
				MarkdownDescription: "Profile that says how the sandbox is established, e.g. `profile.compose-e2e` or `profile.workspace`."},
			"host": schema.StringAttribute{Optional: true, Computed: true,
				// Replacement on a host change is decided in ModifyPlan, after the
				// placement rule has filled in an unset host.
				PlanModifiers: stable,
				MarkdownDescription: "Host (a `host` block of the provider, or `local`), or a `cluster` block for `profile.compose-k8s`. " +
					"Default: the pool host (or cluster) chosen for `host_pool`, " +
					"else the provider's `default_host` (env `SANDBOXER_HOST`), else the profile's first placement entry the provider " +
					"declares (a host, or a pool), else `local`; metered profiles run on `local`. Known at plan time, except when a " +
					"pool chooses it: then at create."},
			"host_pool": schema.StringAttribute{Optional: true,
				Validators: []validator.String{stringvalidator.ConflictsWith(path.MatchRoot("host"))},
				MarkdownDescription: "Host pool (host blocks with this `pool`) to place the sandbox in: on create, the host with the most " +
					"headroom (free sandbox slots, memory, CPU, disk; read live, counting what the same run placed), ties by name. " +
					"The plan checks the pool is not full and warns about hosts it had to skip. An existing sandbox never moves; " +
					"a replacement is placed again."},
			"host_labels": schema.MapAttribute{Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Labels a pool host must carry (its `labels`) to be chosen."},
			"inputs": schema.MapAttribute{Optional: true, ElementType: types.StringType,
				PlanModifiers:       []planmodifier.Map{mapplanmodifier.RequiresReplace()},
				MarkdownDescription: "Inputs the profile declares, e.g. `repo`: a local directory copied into the workspace. Values are never interpreted by a shell."},
			"env": schema.MapAttribute{Optional: true, Sensitive: true, ElementType: types.StringType,
				PlanModifiers: []planmodifier.Map{mapplanmodifier.RequiresReplaceIf(envChangeReplaces,
					"A change replaces the sandbox, except the first apply after an import, which adopts the configured env.",
					"A change replaces the sandbox, except the first apply after an import, which adopts the configured env.")},
				MarkdownDescription: "Environment written to the workspace as `.env` (mode 0600; the compose `.env`). Never stored in the host record, " +
					"but kept in Terraform state like every argument (`sensitive` only hides it from the UI): use `env_wo` for secrets."},
			"env_wo": schema.MapAttribute{Optional: true, Sensitive: true, WriteOnly: true, ElementType: types.StringType,
				MarkdownDescription: "Write-only environment, merged into the workspace `.env` beside `env` (names may not repeat). Read from the " +
					"configuration when the sandbox is created and never stored: not in state, plan, the host record or logs, not even as a hash. " +
					"Change `env_wo_version` to roll out new values (the sandbox is replaced). Needs Terraform >= 1.11 or OpenTofu >= 1.11."},
			"env_wo_version": schema.Int64Attribute{Optional: true,
				PlanModifiers:       []planmodifier.Int64{int64planmodifier.RequiresReplace()},
				MarkdownDescription: "Version of `env_wo`: since write-only values are not stored, changing them shows no diff; change this number to replace the sandbox with the new values."},
			"labels": schema.MapAttribute{Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Free-form labels kept in the host record. Changing them updates in place."},
			"extension": schema.StringAttribute{Computed: true, PlanModifiers: stable,
				MarkdownDescription: "Extension that serves the sandbox, e.g. `ext.compose-ssh`: the profile's, or its fallback when routing chose it. Known at plan time."},
			"status": schema.StringAttribute{Computed: true,
				MarkdownDescription: "`ready`, `stopped` (every service stopped, as `desired_state = \"stopped\"` asks), or what refresh " +
					"found: `degraded` or `missing`. A sandbox found `stopped` while desired running is started in place when its " +
					"containers are all there; anything else that is not as desired plans a replacement."},
			"timings": schema.MapAttribute{Computed: true, ElementType: types.Float64Type,
				PlanModifiers: []planmodifier.Map{mapplanmodifier.UseStateForUnknown()},
				MarkdownDescription: "Where the last create or start spent its time, in seconds: at create `copy` (the record and the " +
					"workspace, the repo copied, when made by themselves; 0 when the command that runs `compose up` makes them, " +
					"its time then in `up`), `render` (the compose file rendered), `up` (`compose up` or `stack deploy`, pulls and " +
					"builds included) and `ready` (waiting for readiness); at a start `start` and `ready`; and `total`. The DEBUG log " +
					"has the same figures. Null after an import."},
			"on_expiry": schema.StringAttribute{Optional: true, Computed: true,
				Default:    stringdefault.StaticString(backends.ExpiryDestroy),
				Validators: []validator.String{stringvalidator.OneOf(backends.ExpiryDestroy, backends.ExpiryStop)},
				MarkdownDescription: "What the host's reaper does once the sandbox expires (`expires_at`): `destroy` (default) removes it; " +
					"`stop` stops its services (as `desired_state = \"stopped\"` does), keeping the workspace, volumes and record, and " +
					"the next refresh shows it `stopped`. Changed in place. Profiles without services refuse `stop` at plan time."},
			"policy": schema.StringAttribute{Optional: true, Computed: true,
				Validators: []validator.String{stringvalidator.OneOf(backends.PolicyLevels...)},
				MarkdownDescription: "What the sandbox's compose file may ask of its host: `trusted`, `baseline` or `restricted` " +
					"(see the guide \"Running untrusted compose files\"). Default: the host block's `policy`, which is the floor: " +
					"a sandbox may tighten it, never loosen it (a looser value is a plan-time error). Every control the file breaks " +
					"is a plan-time error, checked again at apply on the file that is run. The sandbox keeps the policy it was " +
					"created under: a change of it, or of the host's, replaces the sandbox."},
			"desired_state": schema.StringAttribute{Optional: true, Computed: true,
				Default:    stringdefault.StaticString(backends.DesiredRunning),
				Validators: []validator.String{stringvalidator.OneOf(backends.DesiredRunning, backends.DesiredStopped)},
				MarkdownDescription: "`running` (default) or `stopped`: every container of the stack stopped, with the workspace, " +
					"volumes, networks and record kept. Changed in place, never by a replacement: `compose stop` / `compose start` of " +
					"the sandbox's own project (compose v2 and v1), or every service scaled to 0 replicas and back to those its " +
					"compose file declares (swarm). A start waits for readiness as a create does and reads `endpoints` again. " +
					"While stopped, `endpoints` is empty. A stack stopped or started out of band plans a start or a stop. " +
					"Profiles without services (`profile.workspace`, metered `profile.saas-stub`) refuse `stopped` at plan time."},
			"workspace_dir": schema.StringAttribute{Computed: true, PlanModifiers: stable,
				MarkdownDescription: "Absolute path of the sandbox's workspace on its host; empty on a cluster."},
			"compose_project": schema.StringAttribute{Computed: true, PlanModifiers: stable,
				MarkdownDescription: "Compose project name (compose sandboxes only); on a cluster, the sandbox's namespace."},
			"services": schema.ListAttribute{Computed: true, ElementType: serviceType,
				MarkdownDescription: "Compose services, sorted by name, with their state (`running`, `starting`, `unhealthy`, `exited`, `missing`, ...) " +
					"and `ports`: each published port as `{ target, protocol, host_ip, published, address }`, where `address` is " +
					"`endpoint_host:published` (the host block's `endpoint_host`; a port bound to one address is reached there). " +
					"The names are known at plan time: the compose file is loaded on this machine the way `docker compose` loads it. " +
					"Refresh reads the ports with the state (no extra command): a container restarted with a new host port updates them in place."},
			"endpoints": schema.MapAttribute{Computed: true, ElementType: types.StringType,
				MarkdownDescription: "Where each published port is reached: `\"<service>:<target>\"` (`/udp` appended for UDP) to " +
					"`\"<endpoint_host>:<published>\"`, e.g. `sandboxer_sandbox.x.endpoints[\"web:80\"]`. Updated in place by refresh."},
			"published_ports": schema.StringAttribute{Optional: true, Computed: true,
				Default:    stringdefault.StaticString(backends.PortsFree),
				Validators: []validator.String{stringvalidator.OneOf(backends.PortsFree, backends.PortsAsWritten)},
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplaceIf(publishedPortsChangeReplaces,
					"A change replaces the sandbox; a state from before the argument existed takes it in place.",
					"A change replaces the sandbox; a state from before the argument existed takes it in place.")},
				MarkdownDescription: "`free` (default): each port the compose file publishes gets a free host port per sandbox (container port, " +
					"protocol and a host address written in the file are kept; otherwise the host block's `publish_address`), so copies of " +
					"the stack run side by side; find them in `endpoints`. `as_written`: the file's host ports, as `docker compose up` would " +
					"publish them (the plan warns that a second copy collides)."},
			"wait_for_ports": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "`true`: the sandbox is ready only once every published TCP port accepts a connection on its host, within " +
					"the create timeout; a port that never answers fails the create, naming the service and port with its last log lines."},
			"source_hash": schema.StringAttribute{Computed: true,
				MarkdownDescription: "Content hash of the `repo` input directory, computed at plan time: editing a file in it plans a replacement."},
			"created_at": schema.StringAttribute{Computed: true, PlanModifiers: stable,
				MarkdownDescription: "When provisioning started (RFC 3339)."},
			"ready_at": schema.StringAttribute{Computed: true, PlanModifiers: stable,
				MarkdownDescription: "When the sandbox became ready (RFC 3339)."},
			"ttl": schema.StringAttribute{Optional: true, Computed: true,
				MarkdownDescription: "Lifetime, a duration such as `90m` or `8h`; default: the profile's `ttl`. Gives `expires_at`; " +
					"changing it moves the expiry in place (no replacement). Metered profiles are quoted for it."},
			"expires_at": schema.StringAttribute{Computed: true,
				MarkdownDescription: "When the sandbox expires: `created_at` + `ttl` (RFC 3339), kept in the host record."},
			"estimated_cost_usd": schema.Float64Attribute{Computed: true,
				MarkdownDescription: "Metered profiles: the quote (hourly price × ttl), shown at plan time and held against the credits ledger while the sandbox lives. Null for self-hosted ones."},
		},
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Read: true, Update: true, Delete: true}),
		},
	}
}

func (r *SandboxResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = hostIDIdentity("sandbox")
}

// privateAdoptEnv marks a sandbox imported since its last apply. env is
// never recorded on the host, so an import cannot read it back: the next
// apply takes the configured env as the sandbox's (in place, touching
// nothing on the host) instead of replacing a sandbox that is fine.
const privateAdoptEnv = "adopt_env"

// publishedPortsChangeReplaces: a state written before published_ports
// existed (a plan with -refresh=false right after an upgrade) has none;
// that sandbox is not replaced for the default the plan fills in.
func publishedPortsChangeReplaces(_ context.Context, req planmodifier.StringRequest, resp *stringplanmodifier.RequiresReplaceIfFuncResponse) {
	resp.RequiresReplace = !req.StateValue.IsNull()
}

func envChangeReplaces(ctx context.Context, req planmodifier.MapRequest, resp *mapplanmodifier.RequiresReplaceIfFuncResponse) {
	adopt, diags := req.Private.GetKey(ctx, privateAdoptEnv)
	resp.Diagnostics.Append(diags...)
	resp.RequiresReplace = !req.StateValue.IsNull() || string(adopt) != "true"
}

// sandboxListModel is a sandboxer_sandbox list block: its filters.
type sandboxListModel struct {
	Host    types.String `tfsdk:"host"`
	Profile types.String `tfsdk:"profile"`
	Labels  types.Map    `tfsdk:"labels"`
	Status  types.String `tfsdk:"status"`
	Expired types.Bool   `tfsdk:"expired"`
}

func (l *SandboxListResource) ListResourceConfigSchema(_ context.Context, _ list.ListResourceSchemaRequest, resp *list.ListResourceSchemaResponse) {
	resp.Schema = listschema.Schema{
		MarkdownDescription: "Sandboxes recorded on the provider's hosts and clusters, whoever created them: adopt the sandboxes of another " +
			"pipeline (`terraform query -generate-config-out`), or find strays. Every filter given must match. Needs Terraform >= 1.14.",
		Attributes: map[string]listschema.Attribute{
			"host": listschema.StringAttribute{Optional: true,
				MarkdownDescription: "Host or cluster block name (or `local`) to list. Default: every host of the provider, then every cluster " +
					"(the sandboxes in namespaces of its `namespace_prefix`)."},
			"profile": listschema.StringAttribute{Optional: true,
				MarkdownDescription: "Only sandboxes of this profile, e.g. `profile.compose-e2e`."},
			"labels": listschema.MapAttribute{Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Only sandboxes carrying every one of these labels with these values."},
			"status": listschema.StringAttribute{Optional: true,
				Validators: []validator.String{stringvalidator.OneOf(backends.StatusReady, backends.StatusStopped,
					backends.StatusDegraded, backends.StatusMissing)},
				MarkdownDescription: "Only sandboxes whose live status is this: `ready`, `stopped`, `degraded` or `missing`."},
			"expired": listschema.BoolAttribute{Optional: true,
				MarkdownDescription: "`true`: only sandboxes past their `expires_at` (what the reaper removes next); `false`: only those not expired."},
		},
	}
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

// serviceStates are the services in state, name to state ("" while
// unknown).
func (m *sandboxModel) serviceStates(ctx context.Context) map[string]string {
	var list []struct {
		Name  types.String `tfsdk:"name"`
		State types.String `tfsdk:"state"`
		Ports types.List   `tfsdk:"ports"`
	}
	if m.Services.IsNull() || m.Services.IsUnknown() || m.Services.ElementsAs(ctx, &list, false).HasError() {
		return nil
	}
	states := make(map[string]string, len(list))
	for _, s := range list {
		states[s.Name.ValueString()] = s.State.ValueString()
	}
	return states
}

// serviceNames are the names of the services in state, sorted.
func (m *sandboxModel) serviceNames(ctx context.Context) []string {
	return slices.Sorted(maps.Keys(m.serviceStates(ctx)))
}

// containersPresent: refresh found a container (or swarm service) for
// every service, running or not, so a start or a stop in place makes the
// sandbox what its configuration asks; a removed one needs a replacement.
func (m *sandboxModel) containersPresent(ctx context.Context) bool {
	states := m.serviceStates(ctx)
	for _, state := range states {
		if state == backends.ServiceMissing || state == "" {
			return false
		}
	}
	return len(states) > 0
}

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

	if m.DesiredState.IsNull() || m.DesiredState.IsUnknown() { // import: as the host records it
		m.DesiredState = types.StringValue(sb.Desired())
	}
	if m.OnExpiry.IsNull() || m.OnExpiry.IsUnknown() {
		m.OnExpiry = types.StringValue(sb.Expiry())
	}
	// The level the host's record says the sandbox was created under.
	m.Policy = types.StringValue(string(sb.RulesOrNone().Policy.Level.Stricter("")))
	// Measured by this process's create or start; else as they were.
	if sb.Timings != nil {
		v, d := types.MapValueFrom(ctx, types.Float64Type, sb.Timings)
		diags.Append(d...)
		m.Timings = v
	} else if m.Timings.IsUnknown() || m.Timings.IsNull() {
		m.Timings = types.MapNull(types.Float64Type) // typed: a list resource's model starts from zero values
	}

	services := st.Services
	if st.State == backends.StatusStopped {
		// Nothing is reached while stopped, whatever an engine keeps
		// published (a swarm service's ingress ports).
		services = make([]backends.ServiceState, len(st.Services))
		for i, s := range st.Services {
			services[i] = backends.ServiceState{Name: s.Name, State: s.State}
		}
	}
	r := reachOf(services, endpointHost)
	m.Services, m.Endpoints = r.services, r.endpoints
	return diags
}

// failedCreate makes a planned sandbox whose create failed and whose cleanup
// failed too storable: its id, and null for what only the host could say.
// Nothing may stay unknown: Terraform refuses such a state after an apply
// (TestFailedCreateLeavesNothingUnknown sets every computed value unknown).
func (m *sandboxModel) failedCreate(id string) {
	m.ID = types.StringValue(id)
	m.Status = types.StringValue(backends.StatusMissing)
	for _, v := range []*types.String{&m.WorkspaceDir, &m.ComposeProject, &m.CreatedAt, &m.ReadyAt, &m.ExpiresAt,
		&m.SourceHash, &m.Extension, &m.TTL, &m.PublishedPorts} {
		if v.IsUnknown() {
			*v = types.StringNull()
		}
	}
	m.Services = types.ListNull(serviceType) // planned names carry unknown states
	if m.Endpoints.IsUnknown() {
		m.Endpoints = types.MapNull(types.StringType)
	}
	if m.EstimatedCostUSD.IsUnknown() {
		m.EstimatedCostUSD = types.Float64Null()
	}
	if m.WaitForPorts.IsUnknown() {
		m.WaitForPorts = types.BoolNull()
	}
	if m.DesiredState.IsUnknown() {
		m.DesiredState = types.StringNull()
	}
	if m.OnExpiry.IsUnknown() {
		m.OnExpiry = types.StringNull()
	}
	if m.Policy.IsUnknown() {
		m.Policy = types.StringNull()
	}
	if m.Timings.IsUnknown() {
		m.Timings = types.MapNull(types.Float64Type)
	}
}
