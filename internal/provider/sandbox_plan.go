package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/localdir"
)

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
		rr := r.data.placementRequest(configHost, plan.HostPool)
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
		env, envKnown = sandboxEnv(ctx, plan.Env, req.Config, &resp.Diagnostics)
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
		if _, pool := catalog.Place(profile, r.data.placementRequest(configHost, plan.HostPool)); pool != "" {
			r.data.replacing(state.Host.ValueString())
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

// placementRequest is what routing needs to know where a sandbox goes.
func (d *providerData) placementRequest(configHost, hostPool types.String) catalog.RouteRequest {
	return catalog.RouteRequest{
		Host: configHost.ValueString(), Pool: hostPool.ValueString(), DefaultHost: d.defaultHost,
		Declared:     func(h string) bool { _, ok := d.hosts[h]; return ok },
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
