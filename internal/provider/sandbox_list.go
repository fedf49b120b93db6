package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
)

var _ list.ListResourceWithConfigure = &SandboxListResource{}

// NewSandboxListResource is the sandboxer_sandbox list resource constructor.
func NewSandboxListResource() list.ListResource {
	return &SandboxListResource{listBase{name: "_sandbox"}}
}

// SandboxListResource lists sandboxer_sandbox instances: the records of
// the hosts, from the host view (list.go).
type SandboxListResource struct {
	listBase
}

func (l *SandboxListResource) List(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) {
	var m sandboxListModel
	diags := req.Config.Get(ctx, &m)
	labels := stringMap(ctx, m.Labels, &diags)
	stream.Results = hostListing[backends.SandboxInfo]{
		what: "Sandboxes",
		read: l.data.registry.Sandboxes,
		readCluster: func(ctx context.Context, c *backends.Cluster) ([]backends.SandboxInfo, error) {
			return l.data.kube.List(ctx, c)
		},
		keep:   func(info backends.SandboxInfo) bool { return m.matches(info, labels) },
		result: func(_ string, info backends.SandboxInfo) list.ListResult { return l.result(ctx, req, info) },
	}.stream(ctx, l.data, req, m.Host, diags)
}

// matches says whether a sandbox passes every filter given.
func (m sandboxListModel) matches(info backends.SandboxInfo, labels map[string]string) bool {
	sb := info.Sandbox
	switch {
	case !m.Profile.IsNull() && sb.Profile != m.Profile.ValueString(),
		!m.Status.IsNull() && info.Status.State != m.Status.ValueString(),
		!m.Expired.IsNull() && info.Expired != m.Expired.ValueBool():
		return false
	}
	for k, v := range labels {
		if got, ok := sb.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// result is one sandbox as a list result; its resource is what an import
// of it reads (SandboxResource.ImportState, then Read).
func (l *SandboxListResource) result(ctx context.Context, req list.ListRequest, info backends.SandboxInfo) list.ListResult {
	sb := info.Sandbox
	display := fmt.Sprintf("%s (%s on %s, %s)", sb.ID, sb.Profile, sb.Host, info.Status.State)
	return listResult(ctx, req, sb.Host, sb.ID, display, func(t timeouts.Value, diags *diag.Diagnostics) any {
		m := sandboxModel{Host: types.StringValue(sb.Host), ID: types.StringValue(sb.ID), Inputs: types.MapNull(types.StringType),
			Env: types.MapNull(types.StringType), EnvWO: types.MapNull(types.StringType), Labels: types.MapNull(types.StringType),
			HostLabels: types.MapNull(types.StringType), TTL: types.StringNull(), Timeouts: t}
		diags.Append(m.fromBackend(ctx, sb, info.Status, l.data.endpointHost(sb.Host))...)
		return &m
	})
}
