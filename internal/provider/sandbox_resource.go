package provider

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
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
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/events"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/localdir"
)

var (
	_ resource.Resource                   = &SandboxResource{}
	_ resource.ResourceWithConfigure      = &SandboxResource{}
	_ resource.ResourceWithModifyPlan     = &SandboxResource{}
	_ resource.ResourceWithImportState    = &SandboxResource{}
	_ resource.ResourceWithValidateConfig = &SandboxResource{}
	_ resource.ResourceWithIdentity       = &SandboxResource{}
)

// Default timeouts: compose stacks may build images on first start.
const (
	defaultCreateTimeout = 10 * time.Minute
	defaultDeleteTimeout = 5 * time.Minute
	defaultReadTimeout   = 2 * time.Minute
)

// NewSandboxResource is the resource constructor.
func NewSandboxResource() resource.Resource { return &SandboxResource{} }

// SandboxResource is sandboxer_sandbox.
type SandboxResource struct {
	data *providerData
}

func (r *SandboxResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_sandbox"
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
				MarkdownDescription: "Host (a `host` block of the provider, or `local`). Default: the pool host chosen for `host_pool`, " +
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
				MarkdownDescription: "`ready`, or what refresh found: `stopped`, `degraded` or `missing`. Anything but `ready` plans a replacement."},
			"workspace_dir": schema.StringAttribute{Computed: true, PlanModifiers: stable,
				MarkdownDescription: "Absolute path of the sandbox's workspace on its host."},
			"compose_project": schema.StringAttribute{Computed: true, PlanModifiers: stable,
				MarkdownDescription: "Compose project name (compose sandboxes only)."},
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
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Read: true, Delete: true}),
		},
	}
}

func (r *SandboxResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = hostIDIdentity("sandbox")
}

func (r *SandboxResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

// ModifyPlan makes plan-time decisions: the lifetime, routing (extension,
// host and quoted cost), input validation (nothing on the host is touched),
// the repo content hash, and a replacement when refresh found the sandbox
// not ready.
func (r *SandboxResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || r.data == nil {
		return // destroy, or provider not configured yet
	}
	var plan sandboxModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var state *sandboxModel
	if !req.State.Raw.IsNull() {
		state = &sandboxModel{}
		resp.Diagnostics.Append(req.State.Get(ctx, state)...)
	}

	if plan.Profile.IsUnknown() {
		return
	}
	profile, err := r.data.catalog.Get(plan.Profile.ValueString())
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("profile"), "Unknown Profile", err.Error())
		return
	}
	var configHost, configTTL types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("host"), &configHost)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("ttl"), &configTTL)...)
	if configHost.IsUnknown() || configTTL.IsUnknown() || plan.HostPool.IsUnknown() || plan.HostLabels.IsUnknown() {
		return
	}
	poolLabels := stringMap(ctx, plan.HostLabels, &resp.Diagnostics)

	// The lifetime: the ttl argument, else the profile's.
	ttl := profile.TTLDuration()
	plan.TTL = stringOrNull(profile.TTL)
	if !configTTL.IsNull() {
		if ttl, err = time.ParseDuration(configTTL.ValueString()); err != nil || ttl <= 0 {
			resp.Diagnostics.AddAttributeError(path.Root("ttl"), "Invalid TTL",
				fmt.Sprintf("ttl %q is not a positive duration such as 90m or 8h", configTTL.ValueString()))
			return
		}
		plan.TTL = configTTL
	}

	// Extension and host: routed when the sandbox is created; an existing
	// sandbox keeps what it was created with (a credits change never moves it).
	if state == nil {
		var credits *float64
		avail, ok, err := r.data.registry.Credits()
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("profile"), "Unable to Read Credits Ledger", err.Error())
			return
		}
		if ok {
			credits = &avail
		}
		rr := r.placementRequest(configHost, plan.HostPool)
		rr.TTL, rr.Credits = ttl, credits
		route, err := r.data.catalog.Route(profile, rr)
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("profile"), "Unable to Place Sandbox", err.Error())
			return
		}
		if route.Reason != "" {
			resp.Diagnostics.AddAttributeWarning(path.Root("profile"), "Sandbox Routed to Fallback", route.Reason)
		}
		plan.Extension = types.StringValue(route.Extension)
		plan.Host = types.StringValue(route.Host)
		if route.Pool != "" {
			plan.Host = r.planPool(ctx, route.Pool, poolLabels, &resp.Diagnostics)
		} else if len(poolLabels) > 0 {
			resp.Diagnostics.AddAttributeError(path.Root("host_labels"), "Host Labels Without a Pool",
				fmt.Sprintf("host_labels choose among the hosts of a pool, but this sandbox goes to host %q: set host_pool instead of host", route.Host))
		}
		plan.EstimatedCostUSD = types.Float64Null()
		if route.Metered {
			plan.EstimatedCostUSD = types.Float64Value(route.QuoteUSD)
		}
		plan.ExpiresAt = types.StringUnknown()
		if ttl == 0 {
			plan.ExpiresAt = types.StringNull()
		}
	} else {
		plan.Extension, plan.EstimatedCostUSD = state.Extension, state.EstimatedCostUSD
		if !state.EstimatedCostUSD.IsNull() && ttl > 0 { // metered: the quote follows the ttl
			plan.EstimatedCostUSD = types.Float64Value(backends.Quote(profile.HourlyPriceUSD, ttl))
		}
		if configHost.IsNull() {
			plan.Host = state.Host
		}
		plan.ExpiresAt = types.StringNull()
		if created, err := time.Parse(time.RFC3339, state.CreatedAt.ValueString()); err == nil && ttl > 0 {
			plan.ExpiresAt = types.StringValue(created.Add(ttl).UTC().Format(time.RFC3339))
		}
		if !plan.Host.Equal(state.Host) {
			resp.RequiresReplace = append(resp.RequiresReplace, path.Root("host"))
		}
	}
	if plan.Host.IsUnknown() {
		// Chosen from a pool at create; the pool was checked above.
	} else if _, err := r.data.host(plan.Host.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("host"), "Unknown Host", err.Error())
	}
	ext, err := r.data.registry.Extension(plan.Extension.ValueString())
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("profile"), "Unsupported Profile", fmt.Sprintf("profile %s: %v", profile.Name, err))
		return
	}

	// Known when the extension reads its inputs at plan time.
	var plannedServices []string
	var planWarnings []backends.Finding
	var planner backends.Planner
	var inputs, env map[string]string
	if !plan.Inputs.IsUnknown() && !plan.Env.IsUnknown() {
		inputs = stringMap(ctx, plan.Inputs, &resp.Diagnostics)
		if err := profile.CheckInputs(inputs); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("inputs"), "Invalid Sandbox Inputs", err.Error())
		} else if err := ext.Validate(profile, inputs); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("inputs"), "Invalid Sandbox Inputs", err.Error())
		}
		var envKnown bool
		env, envKnown = r.sandboxEnv(ctx, plan.Env, req.Config, &resp.Diagnostics)
		if resp.Diagnostics.HasError() {
			return
		}
		if p, isPlanner := ext.(backends.Planner); isPlanner && envKnown && !plan.PublishedPorts.IsUnknown() {
			planner = p
		}
		plan.SourceHash = types.StringNull()
		if repo := inputs["repo"]; repo != "" {
			hash, err := localdir.Hash(repo)
			if err != nil {
				resp.Diagnostics.AddAttributeError(path.Root("inputs"), "Unable to Read Repo Directory", err.Error())
				return
			}
			plan.SourceHash = types.StringValue(hash)
		}
	} else {
		plan.SourceHash = types.StringUnknown()
	}

	if state != nil {
		if !plan.SourceHash.Equal(state.SourceHash) {
			resp.RequiresReplace = append(resp.RequiresReplace, path.Root("source_hash"))
		}
		// Refresh found the sandbox stopped, degraded or half gone: replace it.
		if state.Status.ValueString() != backends.StatusReady {
			resp.RequiresReplace = append(resp.RequiresReplace, path.Root("status"))
		}
	}
	// The compose file is read for a sandbox about to be created or
	// replaced. One whose content, inputs, env and profile are those in
	// state, and that is ready, was read when it was created: a plan of
	// many unchanged sandboxes does not parse them all again.
	unchanged := state != nil && len(resp.RequiresReplace) == 0 && plan.SourceHash.Equal(state.SourceHash) &&
		plan.Inputs.Equal(state.Inputs) && plan.Env.Equal(state.Env) && plan.EnvWOVersion.Equal(state.EnvWOVersion) &&
		plan.Profile.Equal(state.Profile) && plan.PublishedPorts.Equal(state.PublishedPorts)
	if planner != nil && !unchanged {
		p, err := planner.Plan(profile, inputs, env, backends.PlanOptions{PublishedPorts: plan.PublishedPorts.ValueString()})
		if err != nil {
			// Every problem in the file at once, each its own error.
			for _, e := range unjoin(err) {
				resp.Diagnostics.AddAttributeError(path.Root("inputs"), "Invalid Compose File", e.Error())
			}
			return
		}
		plannedServices, planWarnings = p.Services, p.Warnings
	}
	// Said when the stack is created from this content, not on every plan.
	if state == nil || !plan.SourceHash.Equal(state.SourceHash) {
		for _, w := range planWarnings {
			resp.Diagnostics.AddAttributeWarning(path.Root("inputs"), w.Summary, w.Detail)
		}
	}
	replacing := state == nil || len(resp.RequiresReplace) > 0
	if state != nil && replacing && configHost.IsNull() && plan.EstimatedCostUSD.IsNull() {
		// A replacement is placed again (metered ones stay on local); the
		// sandbox it replaces never moved. Terraform plans the replacement
		// next as a create, which checks the pool; the place of the
		// sandbox it replaces is free by then.
		if _, pool := catalog.Place(profile, r.placementRequest(configHost, plan.HostPool)); pool != "" {
			r.data.uncountReplaced(state.Host.ValueString())
			plan.Host = types.StringUnknown()
		}
	}
	if replacing {
		plan.Status = types.StringValue(backends.StatusReady)
		plan.Services = plannedServiceList(plannedServices)
		plan.Endpoints = types.MapUnknown(types.StringType)
	} else {
		// An in-place update (labels) does not touch the services; Update
		// keeps these as planned and the next refresh reports any change.
		plan.Status = state.Status
		plan.Services = state.Services
		plan.Endpoints = state.Endpoints
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// placementRequest is what routing needs to know where a sandbox goes.
func (r *SandboxResource) placementRequest(configHost, hostPool types.String) catalog.RouteRequest {
	return catalog.RouteRequest{
		Host: configHost.ValueString(), Pool: hostPool.ValueString(), DefaultHost: r.data.defaultHost,
		Declared:     func(h string) bool { _, ok := r.data.hosts[h]; return ok },
		DeclaredPool: func(p string) bool { _, ok := r.data.placer.pools[p]; return ok },
	}
}

// planPool checks that pool can take the sandbox (counting what this plan
// placed before it) and returns the host as planned: unknown, chosen at
// create (pools.go says why). Hosts that had to be skipped are warnings.
func (r *SandboxResource) planPool(ctx context.Context, pool string, labels map[string]string, diags *diag.Diagnostics) types.String {
	placement, err := r.data.place(ctx, pool, labels, false)
	if err != nil {
		diags.AddAttributeError(path.Root("host_pool"), "Unable to Place Sandbox", err.Error())
		return types.StringUnknown()
	}
	for _, s := range placement.Skipped {
		diags.AddAttributeWarning(path.Root("host_pool"), "Pool Host Skipped",
			fmt.Sprintf("pool %q: host %q was skipped: %s", pool, s.Host, s.Reason))
	}
	return types.StringUnknown()
}

func (r *SandboxResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan sandboxModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Create(ctx, defaultCreateTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	profile, err := r.data.catalog.Get(plan.Profile.ValueString())
	if err != nil {
		resp.Diagnostics.AddError("Unable to Create Sandbox", err.Error())
		return
	}
	if plan.Host.IsUnknown() {
		// Placed in a pool now, with what this apply has placed counted.
		_, pool := catalog.Place(profile, r.placementRequest(types.StringNull(), plan.HostPool))
		placement, err := r.data.place(ctx, pool, stringMap(ctx, plan.HostLabels, &resp.Diagnostics), true)
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("host_pool"), "Unable to Place Sandbox", err.Error())
			return
		}
		tflog.Info(ctx, "placed in pool", map[string]any{"pool": pool, "host": placement.Host, "headroom": placement.Headroom})
		plan.Host = types.StringValue(placement.Host)
	}
	hostName := plan.Host.ValueString()
	h, err := r.data.host(hostName)
	if err != nil {
		resp.Diagnostics.AddError("Unable to Create Sandbox", err.Error())
		return
	}
	env, _ := r.sandboxEnv(ctx, plan.Env, req.Config, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	id := backends.NewID()
	ctx = tflog.SetField(ctx, "host", hostName)
	ctx = tflog.SetField(ctx, "sandbox_id", id)
	tflog.Info(ctx, "creating sandbox", map[string]any{"profile": profile.Name})

	breq := backends.Request{
		ID:         id,
		Profile:    profile,
		Host:       h,
		Inputs:     stringMap(ctx, plan.Inputs, &resp.Diagnostics),
		Env:        env,
		Labels:     stringMap(ctx, plan.Labels, &resp.Diagnostics),
		SourceHash: plan.SourceHash.ValueString(),
		Extension:  plan.Extension.ValueString(),

		PublishedPorts: plan.PublishedPorts.ValueString(),
		WaitForPorts:   plan.WaitForPorts.ValueBool(),
	}
	if ttl := plan.TTL.ValueString(); ttl != "" {
		breq.TTL, _ = time.ParseDuration(ttl) // validated at plan time
		breq.TTLText = ttl
	}
	if !plan.EstimatedCostUSD.IsNull() {
		breq.Metered = &backends.Metering{HourlyPriceUSD: profile.HourlyPriceUSD, QuoteUSD: plan.EstimatedCostUSD.ValueFloat64()}
	}
	sb, err := r.data.registry.Create(ctx, breq)
	if err != nil {
		detail := fmt.Sprintf("Profile %s on host %q: %v", profile.Name, hostName, err)
		if !errors.Is(err, backends.ErrCleanupFailed) {
			detail += "\n\nWhat was started for this sandbox has been removed from the host."
			resp.Diagnostics.AddError("Unable to Create Sandbox", detail)
			return
		}
		// Something may remain on the host: keep the id in state, where an
		// error marks it tainted, so the next apply destroys it rather than
		// Terraform forgetting it.
		resp.Diagnostics.AddError("Unable to Create Sandbox", detail+
			"\n\nThe sandbox is kept in state as tainted: the next apply destroys what remains of it and creates it again.")
		plan.failedCreate(id)
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
		setIdentity(ctx, resp.Identity, plan.Host, plan.ID, &resp.Diagnostics)
		return
	}
	tflog.Info(ctx, "sandbox ready")
	ev := events.Event{SandboxID: sb.ID, Host: hostName, Profile: profile.Name}
	ev.Event, ev.Timestamp = events.SandboxCreated, sb.CreatedAt
	r.data.emit(ctx, &resp.Diagnostics, ev)
	ev.Event, ev.Timestamp = events.SandboxReady, *sb.ReadyAt
	r.data.emit(ctx, &resp.Diagnostics, ev)
	// State is what the create left on the host: the record it wrote and the
	// services it just saw ready. No read-back: a second look would cost two
	// commands and see the same, and a failed one must not lose a running
	// stack.
	resp.Diagnostics.Append(plan.fromBackend(ctx, sb, backends.ReadyStatus(sb), h.EndpointHost)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	setIdentity(ctx, resp.Identity, plan.Host, plan.ID, &resp.Diagnostics)
}

// readBack fills m from the host after a write, so state is what the host has.
func (r *SandboxResource) readBack(ctx context.Context, h *hosts.Host, id string, m *sandboxModel, diags *diag.Diagnostics) {
	sb, st, err := r.data.registry.Get(ctx, h, id)
	if err != nil {
		diags.AddError("Unable to Read Sandbox", fmt.Sprintf("Sandbox %s on host %q: %v", id, h.Host(), err))
		return
	}
	diags.Append(m.fromBackend(ctx, sb, st, h.EndpointHost)...)
}

func (r *SandboxResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state sandboxModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := state.Timeouts.Read(ctx, defaultReadTimeout)
	resp.Diagnostics.Append(diags...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	h, err := r.data.host(state.Host.ValueString())
	if err != nil {
		resp.Diagnostics.AddError("Unable to Read Sandbox", err.Error())
		return
	}
	sb, st, err := r.data.registry.Refresh(ctx, h, state.ID.ValueString())
	if errors.Is(err, backends.ErrNotFound) && state.CreatedAt.IsNull() && state.Status.ValueString() == backends.StatusMissing {
		// A create that failed and whose cleanup could not reach the host
		// (failedCreate: kept tainted, never read from a record). Its
		// record may never have been written, but its write may have left
		// a temporary file: the replacement's destroy removes that, so it
		// stays in state until then.
		tflog.Warn(ctx, "failed create has no record on its host; kept for its destroy", map[string]any{"host": h.Host(), "sandbox_id": state.ID.ValueString()})
		setIdentity(ctx, resp.Identity, state.Host, state.ID, &resp.Diagnostics)
		return
	}
	if errors.Is(err, backends.ErrNotFound) {
		tflog.Warn(ctx, "sandbox is gone from its host; removing it from state", map[string]any{"host": h.Host(), "sandbox_id": state.ID.ValueString()})
		r.settleVanished(&state, &resp.Diagnostics)
		resp.State.RemoveResource(ctx)
		// The framework wants an identity even for a resource it drops.
		setIdentity(ctx, resp.Identity, state.Host, state.ID, &resp.Diagnostics)
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("Unable to Read Sandbox", fmt.Sprintf("Sandbox %s on host %q: %v", state.ID.ValueString(), h.Host(), err))
		return
	}
	resp.Diagnostics.Append(state.fromBackend(ctx, sb, st, h.EndpointHost)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
	setIdentity(ctx, resp.Identity, state.Host, state.ID, &resp.Diagnostics)
}

// settleVanished charges a metered sandbox that left its host without a
// destroy (reaped at expiry, or removed by hand): its hold is turned into a
// debit of the quote, the cost of the lifetime it was created for. The
// ledger charges a sandbox once, however often this runs.
func (r *SandboxResource) settleVanished(state *sandboxModel, diags *diag.Diagnostics) {
	if state.EstimatedCostUSD.IsNull() {
		return
	}
	ttl, _ := time.ParseDuration(state.TTL.ValueString())
	quote := state.EstimatedCostUSD.ValueFloat64()
	charged, err := r.data.registry.SettleVanished(state.ID.ValueString(), state.Profile.ValueString(), quote, ttl)
	if err != nil {
		diags.AddWarning("Unable to Settle Metered Sandbox", err.Error())
		return
	}
	if !charged {
		return
	}
	diags.AddWarning("Metered Sandbox Gone",
		fmt.Sprintf("Sandbox %s is no longer on its host; its quote of %.2f USD was debited from the credits ledger.", state.ID.ValueString(), quote))
}

// Update handles what can change in place: labels, ttl (and timeouts),
// and the env adopted after an import.
func (r *SandboxResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state sandboxModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	h, err := r.data.host(plan.Host.ValueString())
	if err != nil {
		resp.Diagnostics.AddError("Unable to Update Sandbox", err.Error())
		return
	}
	labels := stringMap(ctx, plan.Labels, &resp.Diagnostics)
	// A ttl change moves the expiry the host (and its reaper) acts on, and
	// re-quotes a metered sandbox: its hold follows the new quote.
	var expires *time.Time
	if t, err := time.Parse(time.RFC3339, plan.ExpiresAt.ValueString()); err == nil {
		expires = &t
	}
	_, err = r.data.registry.Update(ctx, h, plan.ID.ValueString(), func(sb *backends.Sandbox) {
		sb.Labels, sb.ExpiresAt, sb.TTL = labels, expires, plan.TTL.ValueString()
		sb.WaitForPorts = plan.WaitForPorts.ValueBool()
		if !plan.EstimatedCostUSD.IsNull() {
			sb.QuoteUSD = plan.EstimatedCostUSD.ValueFloat64()
		}
	})
	if err != nil {
		resp.Diagnostics.AddError("Unable to Update Sandbox", fmt.Sprintf("Sandbox %s on host %q: %v", plan.ID.ValueString(), h.Host(), err))
		return
	}
	status, services, endpoints, waitForPorts := plan.Status, plan.Services, plan.Endpoints, plan.WaitForPorts
	r.readBack(ctx, h, plan.ID.ValueString(), &plan, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	plan.Status, plan.Services, plan.Endpoints, plan.WaitForPorts = status, services, endpoints, waitForPorts
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	setIdentity(ctx, resp.Identity, plan.Host, plan.ID, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.Private.SetKey(ctx, privateAdoptEnv, nil)...)
}

func (r *SandboxResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state sandboxModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := state.Timeouts.Delete(ctx, defaultDeleteTimeout)
	resp.Diagnostics.Append(diags...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	r.data.destroySandbox(ctx, &resp.Diagnostics, "Unable to Delete Sandbox",
		state.Host.ValueString(), state.ID.ValueString(), state.Profile.ValueString())
}

// ImportState takes HOST/ID.
func (r *SandboxResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	host, id, err := importTarget(ctx, req, "SANDBOX_ID")
	if err != nil {
		resp.Diagnostics.AddError("Unable to Import Sandbox", err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("host"), host)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), id)...)
	setIdentity(ctx, resp.Identity, types.StringValue(host), types.StringValue(id), &resp.Diagnostics)
	resp.Diagnostics.Append(resp.Private.SetKey(ctx, privateAdoptEnv, []byte("true"))...)
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

// ValidateConfig names the CLI versions write-only values need: older ones
// would otherwise keep them in state or fail with a protocol error.
func (r *SandboxResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var envWO types.Map
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("env_wo"), &envWO)...)
	if !envWO.IsNull() && !req.ClientCapabilities.WriteOnlyAttributesAllowed {
		resp.Diagnostics.AddAttributeError(path.Root("env_wo"), "Write-Only Env Not Supported by This CLI",
			"env_wo is write-only: it needs Terraform >= 1.11 or OpenTofu >= 1.11, which never store its values. "+
				"Upgrade the CLI, or use env (whose values are kept in state).")
	}
}

// sandboxEnv is what the workspace .env holds: env and the configuration's
// env_wo (write-only, so read from the config, never from plan or state).
// ok is false while a value is unknown (plan time); names are checked, and
// may not appear in both.
func (r *SandboxResource) sandboxEnv(ctx context.Context, env types.Map, config tfsdk.Config, diags *diag.Diagnostics) (map[string]string, bool) {
	var envWO types.Map
	diags.Append(config.GetAttribute(ctx, path.Root("env_wo"), &envWO)...)
	if env.IsUnknown() || envWO.IsUnknown() {
		return nil, false
	}
	out := stringMap(ctx, env, diags)
	if err := backends.CheckEnv(out); err != nil {
		diags.AddAttributeError(path.Root("env"), "Invalid Sandbox Env", err.Error())
	}
	wo := stringMap(ctx, envWO, diags)
	if err := backends.CheckEnv(wo); err != nil {
		// Only the name: the value is a secret.
		diags.AddAttributeError(path.Root("env_wo"), "Invalid Sandbox Env", err.Error())
	}
	for _, k := range slices.Sorted(maps.Keys(wo)) {
		if _, dup := out[k]; dup {
			diags.AddAttributeError(path.Root("env_wo"), "Invalid Sandbox Env",
				fmt.Sprintf("%s is set in both env and env_wo; set each name once", k))
		}
		out[k] = wo[k]
	}
	return out, true
}

// plannedServiceList is the services a plan shows: the names when the
// compose file was read at plan time (their state is known after apply),
// else unknown.
func plannedServiceList(names []string) types.List {
	if names == nil {
		return types.ListUnknown(serviceType)
	}
	elems := make([]attr.Value, len(names))
	for i, n := range names {
		elems[i] = types.ObjectValueMust(serviceType.AttrTypes, map[string]attr.Value{
			"name": types.StringValue(n), "state": types.StringUnknown(), "ports": types.ListUnknown(portType),
		})
	}
	return types.ListValueMust(serviceType, elems)
}

// unjoin is the errors an error joins (errors.Join), or the error itself.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
