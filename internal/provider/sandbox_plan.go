package provider

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/localdir"
)

// ModifyPlan makes plan-time decisions: the lifetime, routing (extension,
// host and quoted cost), input validation (nothing on the host is touched),
// the repo content hash, and a replacement when refresh found the sandbox
// not ready. A step that returns false has said why (or left the plan to a
// later one, when a value it needs is unknown): the plan stops there.
func (r *SandboxResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || r.data == nil {
		return // destroy, or provider not configured yet
	}
	p, ok := r.readPlan(ctx, req, resp)
	if !ok || !p.lifetime() || !p.route(ctx) {
		return
	}
	ext, ok := p.extension()
	if !ok {
		return
	}
	compose, ok := p.checkInputs(ctx, ext, req.Config)
	if !ok {
		return
	}
	if !p.checkDesiredState() {
		return
	}
	if p.rules, ok = p.planPolicy(); !ok {
		return
	}
	p.replaceOnChange(ctx)
	services, ok := p.readComposeFile(compose)
	if !ok {
		return
	}
	p.placeReplacement()
	p.planServices(ctx, services)
	setIfChanged(ctx, &resp.Plan, &p.read, &p.plan, &resp.Diagnostics)
}

// sandboxPlan is one ModifyPlan of a sandbox: what it read, and the plan
// its steps build.
type sandboxPlan struct {
	data    *providerData
	resp    *resource.ModifyPlanResponse
	plan    sandboxModel
	read    sandboxModel  // the plan as read: set again only if it changed
	state   *sandboxModel // nil: the sandbox is created
	profile *catalog.Profile
	// host and ttl as configured: plan.Host and plan.TTL are what the plan
	// decides from them.
	configHost, configTTL types.String
	configPolicy          types.String
	rules                 backends.Rules // set by policy
	poolLabels            map[string]string
	ttl                   time.Duration // set by lifetime
}

// readPlan reads the plan, the state, the profile and the configured host
// and ttl. false: the profile is unknown to the catalog, or something the
// plan is decided from is not known yet.
func (r *SandboxResource) readPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) (*sandboxPlan, bool) {
	p := &sandboxPlan{data: r.data, resp: resp}
	resp.Diagnostics.Append(req.Plan.Get(ctx, &p.plan)...)
	if resp.Diagnostics.HasError() {
		return nil, false
	}
	p.read = p.plan
	if !req.State.Raw.IsNull() {
		p.state = &sandboxModel{}
		resp.Diagnostics.Append(req.State.Get(ctx, p.state)...)
	}
	if p.plan.Profile.IsUnknown() {
		return nil, false
	}
	var err error
	if p.profile, err = r.data.catalog.Get(p.plan.Profile.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("profile"), "Unknown Profile", err.Error())
		return nil, false
	}
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("host"), &p.configHost)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("ttl"), &p.configTTL)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("policy"), &p.configPolicy)...)
	if p.configHost.IsUnknown() || p.configTTL.IsUnknown() || p.plan.HostPool.IsUnknown() || p.plan.HostLabels.IsUnknown() {
		return nil, false
	}
	p.poolLabels = stringMap(ctx, p.plan.HostLabels, &resp.Diagnostics)
	return p, true
}

// lifetime is the ttl argument, else the profile's.
func (p *sandboxPlan) lifetime() bool {
	p.ttl = p.profile.TTLDuration()
	p.plan.TTL = stringOrNull(p.profile.TTL)
	if p.configTTL.IsNull() {
		return true
	}
	ttl, err := time.ParseDuration(p.configTTL.ValueString())
	if err != nil || ttl <= 0 {
		p.resp.Diagnostics.AddAttributeError(path.Root("ttl"), "Invalid TTL",
			fmt.Sprintf("ttl %q is not a positive duration such as 90m or 8h", p.configTTL.ValueString()))
		return false
	}
	p.ttl, p.plan.TTL = ttl, p.configTTL
	return true
}

// route decides the extension, the host and the quote: routed when the
// sandbox is created; an existing sandbox keeps what it was created with (a
// credits change never moves it).
func (p *sandboxPlan) route(ctx context.Context) bool {
	if p.state == nil {
		return p.routeNew(ctx)
	}
	p.keepRoute()
	return true
}

func (p *sandboxPlan) routeNew(ctx context.Context) bool {
	var credits *float64
	avail, ok, err := p.data.registry.Credits()
	if err != nil {
		p.resp.Diagnostics.AddAttributeError(path.Root("profile"), "Unable to Read Credits Ledger", err.Error())
		return false
	}
	if ok {
		credits = &avail
	}
	rr := p.data.placementRequest(p.configHost, p.plan.HostPool)
	rr.TTL, rr.Credits = p.ttl, credits
	route, err := p.data.catalog.Route(p.profile, rr)
	if err != nil {
		p.resp.Diagnostics.AddAttributeError(path.Root("profile"), "Unable to Place Sandbox", err.Error())
		return false
	}
	if route.Reason != "" {
		p.resp.Diagnostics.AddAttributeWarning(path.Root("profile"), "Sandbox Routed to Fallback", route.Reason)
	}
	p.plan.Extension = types.StringValue(route.Extension)
	p.plan.Host = types.StringValue(route.Host)
	if route.Pool != "" {
		p.plan.Host = types.StringUnknown() // chosen at create (pools.go says why)
		p.checkPool(ctx, route.Pool)
	} else if len(p.poolLabels) > 0 {
		p.resp.Diagnostics.AddAttributeError(path.Root("host_labels"), "Host Labels Without a Pool",
			fmt.Sprintf("host_labels choose among the hosts of a pool, but this sandbox goes to host %q: set host_pool instead of host", route.Host))
	}
	p.plan.EstimatedCostUSD = types.Float64Null()
	if route.Metered {
		p.plan.EstimatedCostUSD = types.Float64Value(route.QuoteUSD)
	}
	p.plan.ExpiresAt = types.StringUnknown()
	if p.ttl == 0 {
		p.plan.ExpiresAt = types.StringNull()
	}
	return true
}

// checkPool checks that pool can take the sandbox, counting what this plan
// placed before it. Hosts that had to be skipped are warnings.
func (p *sandboxPlan) checkPool(ctx context.Context, pool string) {
	placement, err := p.data.place(ctx, pool, p.poolLabels, p.data.registry.OnCluster(p.plan.Extension.ValueString()), false)
	if err != nil {
		p.resp.Diagnostics.AddAttributeError(path.Root("host_pool"), "Unable to Place Sandbox", err.Error())
		return
	}
	for _, s := range placement.Skipped {
		p.resp.Diagnostics.AddAttributeWarning(path.Root("host_pool"), "Pool Host Skipped",
			fmt.Sprintf("pool %q: host %q was skipped: %s", pool, s.Host, s.Reason))
	}
}

// keepRoute plans an existing sandbox where it is, with a quote and an
// expiry that follow the ttl; a configured host it is not on replaces it.
func (p *sandboxPlan) keepRoute() {
	state := p.state
	p.plan.Extension, p.plan.EstimatedCostUSD = state.Extension, state.EstimatedCostUSD
	if !state.EstimatedCostUSD.IsNull() && p.ttl > 0 { // metered: the quote follows the ttl
		p.plan.EstimatedCostUSD = types.Float64Value(backends.Quote(p.profile.HourlyPriceUSD, p.ttl))
	}
	if p.configHost.IsNull() {
		p.plan.Host = state.Host
	}
	p.plan.ExpiresAt = types.StringNull()
	if created, err := time.Parse(time.RFC3339, state.CreatedAt.ValueString()); err == nil && p.ttl > 0 {
		p.plan.ExpiresAt = types.StringValue(created.Add(p.ttl).UTC().Format(time.RFC3339))
		// An expiry pushed by sandboxer_extend stays until the ttl changes.
		if p.plan.TTL.Equal(state.TTL) && !state.ExpiresAt.IsNull() && !state.ExpiresAt.IsUnknown() {
			p.plan.ExpiresAt = state.ExpiresAt
		}
	}
	if !p.plan.Host.Equal(state.Host) {
		p.resp.RequiresReplace = append(p.resp.RequiresReplace, path.Root("host"))
	}
}

// extension checks the planned host and returns the extension the route
// chose.
func (p *sandboxPlan) extension() (backends.Validator, bool) {
	ext, err := p.data.registry.Validator(p.plan.Extension.ValueString())
	if err != nil {
		p.resp.Diagnostics.AddAttributeError(path.Root("profile"), "Unsupported Profile", fmt.Sprintf("profile %s: %v", p.profile.Name, err))
		return nil, false
	}
	// An unknown host is chosen from a pool at create; route checked the pool.
	if p.plan.Host.IsUnknown() {
		return ext, !p.data.registry.OnCluster(ext.Name()) || p.checkClusterArguments()
	}
	host := p.plan.Host.ValueString()
	_, isCluster := p.data.cluster(host)
	switch kube := p.data.registry.OnCluster(ext.Name()); {
	case kube && !isCluster:
		p.resp.Diagnostics.AddAttributeError(path.Root("host"), "Profile Runs on Clusters",
			fmt.Sprintf("profile %s (%s) runs on a Kubernetes cluster, and %q is no cluster block of the provider: set host to a cluster block's name (declared clusters: %s)",
				p.profile.Name, ext.Name(), host, strings.Join(slices.Sorted(maps.Keys(p.data.clusters)), ", ")))
		return nil, false
	case !kube && isCluster:
		p.resp.Diagnostics.AddAttributeError(path.Root("host"), "Profile Runs on Hosts",
			fmt.Sprintf("%q is a cluster, and profile %s (%s) runs on hosts: use profile.compose-k8s (or a profile of ext.compose-k8s) for a compose file on a cluster",
				host, p.profile.Name, ext.Name()))
		return nil, false
	case kube:
		return ext, p.checkClusterArguments()
	}
	if _, err := p.data.host(host); err != nil {
		p.resp.Diagnostics.AddAttributeError(path.Root("host"), "Unknown Host", err.Error())
	}
	return ext, true
}

// checkClusterArguments refuses what a cluster's sandbox cannot have: a
// lifetime (a cluster has no reaper to act on it).
func (p *sandboxPlan) checkClusterArguments() bool {
	if !p.plan.TTL.IsNull() || p.plan.OnExpiry.ValueString() == backends.ExpiryStop {
		p.resp.Diagnostics.AddAttributeError(path.Root("ttl"), "Lifetime Not Supported on Clusters",
			fmt.Sprintf("profile %s runs on a cluster, which has no reaper to stop or destroy a sandbox at its expiry: remove ttl and on_expiry "+
				"(and a profile's ttl), and destroy the sandbox with Terraform", p.profile.Name))
		return false
	}
	return true
}

// composeInputs is what the compose file is read with at plan time; planner
// is nil when it is not read (an extension without one, or a value not
// known yet).
type composeInputs struct {
	planner     backends.Planner
	inputs, env map[string]string
}

// checkInputs holds the inputs and the env to the profile's and the
// extension's rules and hashes the repo input's content, when they are
// known.
func (p *sandboxPlan) checkInputs(ctx context.Context, ext backends.Validator, config tfsdk.Config) (composeInputs, bool) {
	var c composeInputs
	if p.plan.Inputs.IsUnknown() || p.plan.Env.IsUnknown() {
		p.plan.SourceHash = types.StringUnknown()
		return c, true
	}
	diags := &p.resp.Diagnostics
	c.inputs = stringMap(ctx, p.plan.Inputs, diags)
	if err := p.profile.CheckInputs(c.inputs); err != nil {
		diags.AddAttributeError(path.Root("inputs"), "Invalid Sandbox Inputs", err.Error())
	} else if err := ext.Validate(p.profile, c.inputs); err != nil {
		diags.AddAttributeError(path.Root("inputs"), "Invalid Sandbox Inputs", err.Error())
	}
	env, envKnown := sandboxEnv(ctx, p.plan.Env, config, diags)
	if diags.HasError() {
		return c, false
	}
	if planner, ok := ext.(backends.Planner); ok && envKnown && !p.plan.PublishedPorts.IsUnknown() {
		c.planner, c.env = planner, env
	}
	p.plan.SourceHash = types.StringNull()
	if repo := c.inputs["repo"]; repo != "" {
		hash, err := localdir.Hash(repo)
		if err != nil {
			diags.AddAttributeError(path.Root("inputs"), "Unable to Read Repo Directory", err.Error())
			return c, false
		}
		p.plan.SourceHash = types.StringValue(hash)
	}
	return c, true
}

// checkDesiredState refuses desired_state = "stopped" and on_expiry =
// "stop" for a sandbox with no services to stop (a workspace, a metered
// saas-stub sandbox).
func (p *sandboxPlan) checkDesiredState() bool {
	if p.plan.Extension.IsUnknown() || p.data.registry.CanStop(p.plan.Extension.ValueString()) {
		return true
	}
	ok := true
	for _, arg := range []struct {
		name       string
		value      types.String
		stop, keep string
	}{
		{"desired_state", p.plan.DesiredState, backends.DesiredStopped, backends.DesiredRunning},
		{"on_expiry", p.plan.OnExpiry, backends.ExpiryStop, backends.ExpiryDestroy},
	} {
		if arg.value.ValueString() != arg.stop {
			continue
		}
		ok = false
		p.resp.Diagnostics.AddAttributeError(path.Root(arg.name), "Sandbox Cannot Be Stopped",
			fmt.Sprintf("profile %s (%s) has no services to stop: its sandbox is a directory and is always there. "+
				"%s = %q is for compose and swarm sandboxes; remove it, or set %q.",
				p.profile.Name, p.plan.Extension.ValueString(), arg.name, arg.stop, arg.keep))
	}
	return ok
}

// replaceOnChange replaces a sandbox whose repo content changed, and one
// refresh found not as desired in a way no stop or start mends: degraded,
// half gone, or a container missing. A stack stopped while desired running,
// or running while desired stopped, with every container there, is started
// or stopped in place (planServices).
func (p *sandboxPlan) replaceOnChange(ctx context.Context) {
	if p.state == nil {
		return
	}
	if !p.plan.SourceHash.Equal(p.state.SourceHash) {
		p.resp.RequiresReplace = append(p.resp.RequiresReplace, path.Root("source_hash"))
	}
	status, desired := p.state.Status.ValueString(), p.plan.DesiredState.ValueString()
	switch {
	case status == backends.StatusReady && desired != backends.DesiredStopped:
	case status == backends.StatusMissing:
		p.resp.RequiresReplace = append(p.resp.RequiresReplace, path.Root("status"))
	case (status == backends.StatusStopped || desired == backends.DesiredStopped) && p.state.containersPresent(ctx) &&
		p.data.registry.CanStop(p.state.Extension.ValueString()):
	default:
		p.resp.RequiresReplace = append(p.resp.RequiresReplace, path.Root("status"))
	}
}

// replacing: the sandbox is created, or replaced.
func (p *sandboxPlan) replacing() bool { return p.state == nil || len(p.resp.RequiresReplace) > 0 }

// readComposeFile loads the compose file of a sandbox about to be created
// or replaced, the way `docker compose` does, for the names of its
// services; every problem in it is an error. One whose content, inputs,
// env and profile are those in state, and that is ready, was read when it
// was created: a plan of many unchanged sandboxes does not parse them all
// again.
func (p *sandboxPlan) readComposeFile(c composeInputs) ([]string, bool) {
	state := p.state
	unchanged := state != nil && !p.replacing() && p.plan.SourceHash.Equal(state.SourceHash) &&
		p.plan.Inputs.Equal(state.Inputs) && p.plan.Env.Equal(state.Env) && p.plan.EnvWOVersion.Equal(state.EnvWOVersion) &&
		p.plan.Profile.Equal(state.Profile) && p.plan.PublishedPorts.Equal(state.PublishedPorts) && p.plan.Policy.Equal(state.Policy)
	if c.planner == nil || unchanged {
		return nil, true
	}
	planned, err := c.planner.Plan(p.profile, c.inputs, c.env, backends.PlanOptions{PublishedPorts: p.plan.PublishedPorts.ValueString(), Rules: p.rules})
	if err != nil {
		// Every problem in the file at once, each its own error.
		for _, e := range unjoin(err) {
			p.resp.Diagnostics.AddAttributeError(path.Root("inputs"), "Invalid Compose File", e.Error())
		}
		return nil, false
	}
	// Said when the stack is created from this content, not on every plan.
	if state == nil || !p.plan.SourceHash.Equal(state.SourceHash) {
		for _, w := range planned.Warnings {
			p.resp.Diagnostics.AddAttributeWarning(path.Root("inputs"), w.Summary, w.Detail)
		}
	}
	return planned.Services, true
}

// placeReplacement places a replacement again (metered ones stay on
// local); the sandbox it replaces never moved. Terraform plans the
// replacement next as a create, which checks the pool; the place of the
// sandbox it replaces is free by then.
func (p *sandboxPlan) placeReplacement() {
	if p.state == nil || !p.replacing() || !p.configHost.IsNull() || !p.plan.EstimatedCostUSD.IsNull() {
		return
	}
	if _, pool := catalog.Place(p.profile, p.data.placementRequest(p.configHost, p.plan.HostPool)); pool != "" {
		p.data.uncountReplaced(p.state.Host.ValueString())
		p.plan.Host = types.StringUnknown()
	}
}

// planServices plans a created or replaced sandbox ready, with the services
// the compose file names. An in-place update (labels) does not touch the
// services; Update keeps these as planned and the next refresh reports any
// change.
//
// A sandbox whose services are to stop is planned stopped, with no
// endpoints; one to start, ready, with its ports known after apply.
func (p *sandboxPlan) planServices(ctx context.Context, names []string) {
	stopped := p.plan.DesiredState.ValueString() == backends.DesiredStopped
	if !p.replacing() {
		p.plan.Status, p.plan.Services, p.plan.Endpoints = p.state.Status, p.state.Services, p.state.Endpoints
		switch status := p.state.Status.ValueString(); {
		case stopped && status != backends.StatusStopped:
			p.plan.Status = types.StringValue(backends.StatusStopped)
			p.plan.Services = plannedServiceList(p.state.serviceNames(ctx))
			p.plan.Endpoints = types.MapValueMust(types.StringType, map[string]attr.Value{})
		case !stopped && status == backends.StatusStopped:
			p.plan.Status = types.StringValue(backends.StatusReady)
			p.plan.Services = plannedServiceList(p.state.serviceNames(ctx))
			p.plan.Endpoints = types.MapUnknown(types.StringType)
			p.plan.Timings = types.MapUnknown(types.Float64Type) // measured at the start
		}
		return
	}
	p.plan.Status = types.StringValue(backends.StatusReady)
	p.plan.Services = plannedServiceList(names)
	p.plan.Endpoints = types.MapUnknown(types.StringType)
	if stopped {
		p.plan.Status = types.StringValue(backends.StatusStopped)
		p.plan.Endpoints = types.MapValueMust(types.StringType, map[string]attr.Value{})
	}
}

// placementRequest is what routing needs to know where a sandbox goes.
func (d *providerData) placementRequest(configHost, hostPool types.String) catalog.RouteRequest {
	return catalog.RouteRequest{
		Host: configHost.ValueString(), Pool: hostPool.ValueString(), DefaultHost: d.defaultHost,
		Declared:     func(h string) bool { _, host := d.hosts[h]; _, cluster := d.clusters[h]; return host || cluster },
		DeclaredPool: func(p string) bool { _, ok := d.placer.pools[p]; return ok },
	}
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
