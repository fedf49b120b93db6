package provider

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/list/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// List resources (Terraform >= 1.14: `list` blocks in .tfquery.hcl files,
// `terraform query`): what lives on the provider's hosts, as identities
// ready for import blocks and, with include_resource, as the state an
// import would read, so `terraform query -generate-config-out` writes
// configuration that plans clean after the import. Listing only reads: one
// command per host for sandboxes (the host view refreshes share), one for
// snapshots (the store's manifests).

var (
	_ list.ListResourceWithConfigure = &SandboxListResource{}
	_ list.ListResourceWithConfigure = &SnapshotListResource{}
)

// NewSandboxListResource is the sandboxer_sandbox list resource constructor.
func NewSandboxListResource() list.ListResource { return &SandboxListResource{} }

// SandboxListResource lists sandboxer_sandbox instances.
type SandboxListResource struct {
	data *providerData
}

type sandboxListModel struct {
	Host    types.String `tfsdk:"host"`
	Profile types.String `tfsdk:"profile"`
	Labels  types.Map    `tfsdk:"labels"`
	Status  types.String `tfsdk:"status"`
	Expired types.Bool   `tfsdk:"expired"`
}

func (l *SandboxListResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_sandbox"
}

func (l *SandboxListResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	l.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (l *SandboxListResource) ListResourceConfigSchema(_ context.Context, _ list.ListResourceSchemaRequest, resp *list.ListResourceSchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Sandboxes recorded on the provider's hosts, whoever created them: adopt the sandboxes of another " +
			"pipeline (`terraform query -generate-config-out`), or find strays. Every filter given must match. Needs Terraform >= 1.14.",
		Attributes: map[string]schema.Attribute{
			"host": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Host block name (or `local`) to list. Default: every host of the provider."},
			"profile": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Only sandboxes of this profile, e.g. `profile.compose-e2e`."},
			"labels": schema.MapAttribute{Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Only sandboxes carrying every one of these labels with these values."},
			"status": schema.StringAttribute{Optional: true,
				Validators: []validator.String{stringvalidator.OneOf(backends.StatusReady, backends.StatusStopped,
					backends.StatusDegraded, backends.StatusMissing)},
				MarkdownDescription: "Only sandboxes whose live status is this: `ready`, `stopped`, `degraded` or `missing`."},
			"expired": schema.BoolAttribute{Optional: true,
				MarkdownDescription: "`true`: only sandboxes past their `expires_at` (what the reaper removes next); `false`: only those not expired."},
		},
	}
}

func (l *SandboxListResource) List(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) {
	var m sandboxListModel
	if diags := req.Config.Get(ctx, &m); diags.HasError() {
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	var diags diag.Diagnostics
	want := stringMap(ctx, m.Labels, &diags)
	targets, err := l.data.listTargets(m.Host)
	if err != nil {
		diags.AddAttributeError(path.Root("host"), "Unknown Host", err.Error())
	}
	if diags.HasError() {
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	stream.Results = limited(req.Limit, func(push func(list.ListResult) bool) {
		for _, h := range targets {
			found, err := l.data.registry.Sandboxes(ctx, h)
			if err != nil {
				var d diag.Diagnostics
				d.AddError("Unable to List Sandboxes", fmt.Sprintf("Host %q: %v", h.Host(), err))
				push(list.ListResult{Diagnostics: d})
				return
			}
			for _, info := range found {
				if !m.matches(info, want) {
					continue
				}
				if !push(l.result(ctx, req, info)) {
					return
				}
			}
		}
	})
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

// result is one sandbox as a list result: its identity, a name people can
// read, and (include_resource) the state an import of it reads.
func (l *SandboxListResource) result(ctx context.Context, req list.ListRequest, info backends.SandboxInfo) list.ListResult {
	sb := info.Sandbox
	r := req.NewListResult(ctx)
	r.DisplayName = fmt.Sprintf("%s (%s on %s, %s)", sb.ID, sb.Profile, sb.Host, info.Status.State)
	host, id := types.StringValue(sb.Host), types.StringValue(sb.ID)
	setIdentity(ctx, r.Identity, host, id, &r.Diagnostics)
	if !req.IncludeResource {
		return r
	}
	m := sandboxModel{Host: host, ID: id, Inputs: types.MapNull(types.StringType), Env: types.MapNull(types.StringType),
		EnvWO: types.MapNull(types.StringType), Labels: types.MapNull(types.StringType), HostLabels: types.MapNull(types.StringType), TTL: types.StringNull()}
	m.Timeouts = nullTimeouts(ctx, req, &r.Diagnostics)
	r.Diagnostics.Append(m.fromBackend(ctx, sb, info.Status, l.data.endpointHost(sb.Host))...)
	r.Diagnostics.Append(r.Resource.Set(ctx, &m)...)
	return r
}

// NewSnapshotListResource is the sandboxer_snapshot list resource constructor.
func NewSnapshotListResource() list.ListResource { return &SnapshotListResource{} }

// SnapshotListResource lists sandboxer_snapshot instances.
type SnapshotListResource struct {
	data *providerData
}

type snapshotListModel struct {
	Host      types.String `tfsdk:"host"`
	SandboxID types.String `tfsdk:"sandbox_id"`
	Name      types.String `tfsdk:"name"`
}

func (l *SnapshotListResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_snapshot"
}

func (l *SnapshotListResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	l.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (l *SnapshotListResource) ListResourceConfigSchema(_ context.Context, _ list.ListResourceSchemaRequest, resp *list.ListResourceSchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Snapshots in the stores of the provider's hosts, oldest first, whoever took them (a " +
			"`sandboxer_snapshot` action's, a retained one's, another configuration's). Needs Terraform >= 1.14.",
		Attributes: map[string]schema.Attribute{
			"host": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Host block name (or `local`) whose store to list. Default: every host of the provider."},
			"sandbox_id": schema.StringAttribute{Optional: true, Validators: []validator.String{idValidator("sandbox")},
				MarkdownDescription: "Only snapshots of this sandbox."},
			"name": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Only snapshots whose name contains this (as `data.sandboxer_snapshots` filters)."},
		},
	}
}

func (l *SnapshotListResource) List(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) {
	var m snapshotListModel
	if diags := req.Config.Get(ctx, &m); diags.HasError() {
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	targets, err := l.data.listTargets(m.Host)
	if err != nil {
		var diags diag.Diagnostics
		diags.AddAttributeError(path.Root("host"), "Unknown Host", err.Error())
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	stream.Results = limited(req.Limit, func(push func(list.ListResult) bool) {
		for _, h := range targets {
			found, err := l.data.registry.ListSnapshots(ctx, h)
			if err != nil {
				var d diag.Diagnostics
				d.AddError("Unable to List Snapshots", fmt.Sprintf("Host %q: %v", h.Host(), err))
				push(list.ListResult{Diagnostics: d})
				return
			}
			sort.SliceStable(found, func(i, j int) bool { return found[i].CreatedAt.Before(found[j].CreatedAt) })
			for _, s := range found {
				if !m.matches(s) {
					continue
				}
				if !push(l.result(ctx, req, h, s)) {
					return
				}
			}
		}
	})
}

// matches says whether a snapshot passes every filter given.
func (m snapshotListModel) matches(s checkpoint.Summary) bool {
	if sb := m.SandboxID.ValueString(); sb != "" && s.SandboxID != sb {
		return false
	}
	return m.Name.ValueString() == "" || strings.Contains(s.Name, m.Name.ValueString())
}

// result is one snapshot as a list result; its resource is what an import
// of it reads (SnapshotResource.ImportState, then Read).
func (l *SnapshotListResource) result(ctx context.Context, req list.ListRequest, h *hosts.Host, s checkpoint.Summary) list.ListResult {
	r := req.NewListResult(ctx)
	r.DisplayName = fmt.Sprintf("%s %q (sandbox %s on %s)", s.ID, s.Name, s.SandboxID, h.Host())
	host, id := types.StringValue(h.Host()), types.StringValue(s.ID)
	setIdentity(ctx, r.Identity, host, id, &r.Diagnostics)
	if !req.IncludeResource {
		return r
	}
	m := snapshotModel{Host: host, ID: id, Name: types.StringNull(), SandboxID: types.StringNull(),
		Quiesce: types.StringValue(backends.QuiesceNone), RetainOnDestroy: types.BoolValue(false),
		Volumes: types.ListNull(types.StringType)}
	m.Timeouts = nullTimeouts(ctx, req, &r.Diagnostics)
	m.fromSummary(ctx, s, &r.Diagnostics)
	r.Diagnostics.Append(r.Resource.Set(ctx, &m)...)
	return r
}

// listTargets is the host a list names, or every host of the provider.
func (d *providerData) listTargets(host types.String) ([]*hosts.Host, error) {
	if host.IsNull() || host.ValueString() == "" {
		var all []*hosts.Host
		for _, n := range slices.Sorted(maps.Keys(d.hosts)) {
			all = append(all, d.hosts[n])
		}
		return all, nil
	}
	h, err := d.host(host.ValueString())
	if err != nil {
		return nil, err
	}
	return []*hosts.Host{h}, nil
}

// limited stops a result stream after limit results (none when limit is
// not positive): Terraform asks for at most that many, and the hosts past
// it are then never read.
func limited(limit int64, results iter.Seq[list.ListResult]) iter.Seq[list.ListResult] {
	return func(push func(list.ListResult) bool) {
		var n int64
		for r := range results {
			if !push(r) {
				return
			}
			if r.Diagnostics.HasError() {
				return
			}
			if n++; limit > 0 && n >= limit {
				return
			}
		}
	}
}

// nullTimeouts is an unset timeouts block of the listed resource's schema.
func nullTimeouts(ctx context.Context, req list.ListRequest, diags *diag.Diagnostics) timeouts.Value {
	t, d := req.ResourceSchema.TypeAtPath(ctx, path.Root("timeouts"))
	diags.Append(d...)
	if d.HasError() {
		return timeouts.Value{}
	}
	v, err := t.ValueFromTerraform(ctx, tftypes.NewValue(t.TerraformType(ctx), nil))
	if err != nil {
		diags.AddError("Unable to List", err.Error())
		return timeouts.Value{}
	}
	tv, _ := v.(timeouts.Value)
	return tv
}
