package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
)

// sandboxer_sandbox on a cluster (clusters.go): the same resource, its
// lifecycle run by the cluster extension instead of the registry's host
// steps.

// createOnCluster creates the sandbox breq asks for on c.
func (r *SandboxResource) createOnCluster(ctx context.Context, c *backends.Cluster, breq backends.Request, plan *sandboxModel, resp *resource.CreateResponse) {
	sb, st, err := r.data.kube.Create(ctx, c, breq)
	if err != nil {
		r.createFailed(ctx, breq.ID, fmt.Sprintf("Profile %s on cluster %q", breq.Profile.Name, c.Name), err, plan, resp)
		return
	}
	r.created(ctx, sb, &resp.Diagnostics)
	if plan.DesiredState.ValueString() == backends.DesiredStopped {
		stopped, stoppedSt, err := r.data.kube.Update(ctx, c, sb.ID, func(sb *backends.Sandbox) { sb.SetDesired(backends.DesiredStopped) }, backends.DesiredStopped)
		if err != nil {
			// Saved with the error: Terraform keeps it tainted, and the
			// next apply replaces it.
			resp.Diagnostics.AddError("Unable to Stop Sandbox", fmt.Sprintf("Sandbox %s on cluster %q was created and is ready, "+
				"but stopping it (desired_state = %q) failed: %v", sb.ID, c.Name, backends.DesiredStopped, err))
		} else {
			stopped.Timings = sb.Timings
			sb, st = stopped, stoppedSt
		}
	}
	resp.Diagnostics.Append(plan.fromBackend(ctx, sb, st, c.NodeAddress)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, plan)...)
	setIdentity(ctx, resp.Identity, plan.Host, plan.ID, &resp.Diagnostics)
}

// refreshSandbox reads a sandbox as it is on its host or cluster, and
// where its published ports are reached.
func (d *providerData) refreshSandbox(ctx context.Context, host, id string) (*backends.Sandbox, backends.Status, string, error) {
	if c, ok := d.cluster(host); ok {
		sb, st, err := d.kube.Get(ctx, c, id)
		return sb, st, c.NodeAddress, err
	}
	h, err := d.host(host)
	if err != nil {
		return nil, backends.Status{}, "", err
	}
	sb, st, err := d.registry.Refresh(ctx, h, id)
	return sb, st, h.EndpointHost, err
}

// updateOnCluster writes change into the record, and stops or starts the
// sandbox when the plan says its status changes.
func (r *SandboxResource) updateOnCluster(ctx context.Context, c *backends.Cluster, change func(*backends.Sandbox), plan, state sandboxModel, resp *resource.UpdateResponse) {
	desired := ""
	if stopsOrStarts(plan, state) {
		desired = plan.DesiredState.ValueString()
	}
	sb, st, err := r.data.kube.Update(ctx, c, plan.ID.ValueString(), change, desired)
	if err != nil {
		resp.Diagnostics.AddError("Unable to Update Sandbox", fmt.Sprintf("Sandbox %s on cluster %q, desired_state = %q: %v",
			plan.ID.ValueString(), c.Name, plan.DesiredState.ValueString(), err))
		return
	}
	// Nothing stopped or started: the services stay as planned (as in
	// state); the next refresh reports any change.
	status, services, endpoints, timings := plan.Status, plan.Services, plan.Endpoints, plan.Timings
	resp.Diagnostics.Append(plan.fromBackend(ctx, sb, st, c.NodeAddress)...)
	if desired == "" {
		plan.Status, plan.Services, plan.Endpoints, plan.Timings = status, services, endpoints, timings
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	setIdentity(ctx, resp.Identity, plan.Host, plan.ID, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.Private.SetKey(ctx, privateAdoptEnv, nil)...)
}
