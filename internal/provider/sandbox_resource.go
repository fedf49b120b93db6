package provider

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/events"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

var (
	_ resource.Resource                   = &SandboxResource{}
	_ resource.ResourceWithConfigure      = &SandboxResource{}
	_ resource.ResourceWithModifyPlan     = &SandboxResource{}
	_ resource.ResourceWithImportState    = &SandboxResource{}
	_ resource.ResourceWithValidateConfig = &SandboxResource{}
	_ resource.ResourceWithIdentity       = &SandboxResource{}
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

func (r *SandboxResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
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
		_, pool := catalog.Place(profile, r.data.placementRequest(types.StringNull(), plan.HostPool))
		placement, err := r.data.place(ctx, pool, stringMap(ctx, plan.HostLabels, &resp.Diagnostics), r.data.registry.OnCluster(plan.Extension.ValueString()), true)
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("host_pool"), "Unable to Place Sandbox", err.Error())
			return
		}
		tflog.Info(ctx, "placed in pool", map[string]any{"pool": pool, "host": placement.Host, "headroom": placement.Headroom})
		plan.Host = types.StringValue(placement.Host)
	}
	hostName := plan.Host.ValueString()
	cluster, onCluster := r.data.cluster(hostName)
	var h *hosts.Host
	if !onCluster {
		if h, err = r.data.host(hostName); err != nil {
			resp.Diagnostics.AddError("Unable to Create Sandbox", err.Error())
			return
		}
	}
	env, _ := sandboxEnv(ctx, plan.Env, req.Config, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	rules, err := r.data.createRules(hostName, plan.Policy)
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("policy"), "Unable to Create Sandbox", err.Error())
		return
	}
	plan.Policy = types.StringValue(string(rules.Policy.Level))
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
		OnExpiry:       plan.OnExpiry.ValueString(),
		Rules:          rules,
	}
	if ttl := plan.TTL.ValueString(); ttl != "" {
		breq.TTL, _ = time.ParseDuration(ttl) // validated at plan time
		breq.TTLText = ttl
	}
	if !plan.EstimatedCostUSD.IsNull() {
		breq.Metered = &backends.Metering{HourlyPriceUSD: profile.HourlyPriceUSD, QuoteUSD: plan.EstimatedCostUSD.ValueFloat64()}
	}
	if onCluster {
		r.createOnCluster(ctx, cluster, breq, &plan, resp)
		return
	}
	sb, err := r.data.registry.Create(ctx, breq)
	if err != nil {
		r.createFailed(ctx, id, fmt.Sprintf("Profile %s on host %q", profile.Name, hostName), err, &plan, resp)
		return
	}
	r.created(ctx, sb, &resp.Diagnostics)
	// State is what the create left on the host: the record it wrote and the
	// services it just saw ready. No read-back: a second look would cost two
	// commands and see the same, and a failed one must not lose a running
	// stack.
	status := backends.ReadyStatus(sb)
	if plan.DesiredState.ValueString() == backends.DesiredStopped {
		stopped, err := r.data.registry.SetDesiredState(ctx, h, sb, backends.DesiredStopped)
		if err != nil {
			// Saved with the error: Terraform keeps it tainted, and the
			// next apply replaces it.
			resp.Diagnostics.AddError("Unable to Stop Sandbox", fmt.Sprintf("Sandbox %s on host %q was created and is ready, "+
				"but stopping it (desired_state = %q) failed: %v", sb.ID, hostName, backends.DesiredStopped, err))
		} else {
			status = stopped
		}
	}
	resp.Diagnostics.Append(plan.fromBackend(ctx, sb, status, h.EndpointHost)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	setIdentity(ctx, resp.Identity, plan.Host, plan.ID, &resp.Diagnostics)
}

// createFailed says why a create failed. A create whose cleanup failed
// too may have left something: its id is kept in state, where the error
// marks it tainted, so the next apply destroys it rather than Terraform
// forgetting it.
func (r *SandboxResource) createFailed(ctx context.Context, id, what string, err error, plan *sandboxModel, resp *resource.CreateResponse) {
	detail := fmt.Sprintf("%s: %v", what, err)
	if !errors.Is(err, backends.ErrCleanupFailed) {
		resp.Diagnostics.AddError("Unable to Create Sandbox", detail+"\n\nWhat was started for this sandbox has been removed.")
		return
	}
	resp.Diagnostics.AddError("Unable to Create Sandbox", detail+
		"\n\nThe sandbox is kept in state as tainted: the next apply destroys what remains of it and creates it again.")
	plan.failedCreate(id)
	resp.Diagnostics.Append(resp.State.Set(ctx, plan)...)
	setIdentity(ctx, resp.Identity, plan.Host, plan.ID, &resp.Diagnostics)
}

// created announces a sandbox that is ready.
func (r *SandboxResource) created(ctx context.Context, sb *backends.Sandbox, diags *diag.Diagnostics) {
	tflog.Info(ctx, "sandbox ready")
	ev := events.Event{SandboxID: sb.ID, Host: sb.Host, Profile: sb.Profile}
	ev.Event, ev.Timestamp = events.SandboxCreated, sb.CreatedAt
	r.data.emit(ctx, diags, ev)
	ev.Event, ev.Timestamp = events.SandboxReady, *sb.ReadyAt
	r.data.emit(ctx, diags, ev)
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
	ctx = tflog.SetField(tflog.SetField(ctx, "host", state.Host.ValueString()), "sandbox_id", state.ID.ValueString())

	host := state.Host.ValueString()
	sb, st, endpointHost, err := r.data.refreshSandbox(ctx, host, state.ID.ValueString())
	if errors.Is(err, backends.ErrNotFound) && state.CreatedAt.IsNull() && state.Status.ValueString() == backends.StatusMissing {
		// A create that failed and whose cleanup could not reach the host
		// (failedCreate: kept tainted, never read from a record). Its
		// record may never have been written, but its write may have left
		// a temporary file: the replacement's destroy removes that, so it
		// stays in state until then.
		tflog.Warn(ctx, "failed create has no record on its host; kept for its destroy", map[string]any{"host": host, "sandbox_id": state.ID.ValueString()})
		setIdentity(ctx, resp.Identity, state.Host, state.ID, &resp.Diagnostics)
		return
	}
	if errors.Is(err, backends.ErrNotFound) {
		tflog.Warn(ctx, "sandbox is gone from its host; removing it from state", map[string]any{"host": host, "sandbox_id": state.ID.ValueString()})
		r.settleVanished(&state, &resp.Diagnostics)
		resp.State.RemoveResource(ctx)
		// The framework wants an identity even for a resource it drops.
		setIdentity(ctx, resp.Identity, state.Host, state.ID, &resp.Diagnostics)
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("Unable to Read Sandbox", fmt.Sprintf("Sandbox %s on host %q: %v", state.ID.ValueString(), host, err))
		return
	}
	read := state
	resp.Diagnostics.Append(state.fromBackend(ctx, sb, st, endpointHost)...)
	setIfChanged(ctx, &resp.State, &read, &state, &resp.Diagnostics)
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
// the env adopted after an import, and desired_state: a stop or a start.
func (r *SandboxResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state sandboxModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Update(ctx, defaultUpdateTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	labels := stringMap(ctx, plan.Labels, &resp.Diagnostics)
	// A ttl change moves the expiry the host (and its reaper) acts on, and
	// re-quotes a metered sandbox: its hold follows the new quote.
	var expires *time.Time
	if t, err := time.Parse(time.RFC3339, plan.ExpiresAt.ValueString()); err == nil {
		expires = &t
	}
	change := func(sb *backends.Sandbox) {
		sb.Labels, sb.ExpiresAt, sb.TTL = labels, expires, plan.TTL.ValueString()
		sb.WaitForPorts = plan.WaitForPorts.ValueBool()
		sb.SetOnExpiry(plan.OnExpiry.ValueString())
		sb.SetDesired(plan.DesiredState.ValueString())
		if !plan.EstimatedCostUSD.IsNull() {
			sb.QuoteUSD = plan.EstimatedCostUSD.ValueFloat64()
		}
	}
	if c, ok := r.data.cluster(plan.Host.ValueString()); ok {
		r.updateOnCluster(ctx, c, change, plan, state, resp)
		return
	}
	h, err := r.data.host(plan.Host.ValueString())
	if err != nil {
		resp.Diagnostics.AddError("Unable to Update Sandbox", err.Error())
		return
	}
	if desired := plan.DesiredState.ValueString(); r.data.registry.CanStop(plan.Extension.ValueString()) && stopsOrStarts(plan, state) {
		// The record rides the stop's or the start's command; the services
		// and endpoints are what that left.
		sb, st, err := r.data.registry.UpdateAndSetState(ctx, h, plan.ID.ValueString(), change, desired)
		if err != nil {
			resp.Diagnostics.AddError("Unable to Update Sandbox", fmt.Sprintf("Sandbox %s on host %q, desired_state = %q: %v",
				plan.ID.ValueString(), h.Host(), desired, err))
			return
		}
		resp.Diagnostics.Append(plan.fromBackend(ctx, sb, st, h.EndpointHost)...)
	} else {
		sb, err := r.data.registry.Update(ctx, h, plan.ID.ValueString(), change)
		if err != nil {
			resp.Diagnostics.AddError("Unable to Update Sandbox", fmt.Sprintf("Sandbox %s on host %q: %v", plan.ID.ValueString(), h.Host(), err))
			return
		}
		// State is the record as written; the services are as planned (the
		// refresh before this read them, and nothing here touched them), so
		// no status is read again: across an apply changing many sandboxes'
		// ttl or labels, that was two host commands each, and the compose
		// command's detection.
		status, services, endpoints, waitForPorts := plan.Status, plan.Services, plan.Endpoints, plan.WaitForPorts
		resp.Diagnostics.Append(plan.fromBackend(ctx, sb, backends.Status{State: status.ValueString()}, h.EndpointHost)...)
		plan.Status, plan.Services, plan.Endpoints, plan.WaitForPorts = status, services, endpoints, waitForPorts
	}
	if resp.Diagnostics.HasError() {
		return
	}
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
	ctx = tflog.SetField(tflog.SetField(ctx, "host", state.Host.ValueString()), "sandbox_id", state.ID.ValueString())

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
func sandboxEnv(ctx context.Context, env types.Map, config tfsdk.Config, diags *diag.Diagnostics) (map[string]string, bool) {
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

// stopsOrStarts says whether an Update stops or starts the sandbox: when
// its plan changes the status (planServices). A desired_state already met
// (a start cut off after the host had started the stack, refreshed ready)
// plans no change of status, and none is made: the timings stay the
// planned ones, which a start would replace (Terraform's "inconsistent
// result after apply").
func stopsOrStarts(plan, state sandboxModel) bool {
	return !plan.Status.Equal(state.Status)
}
