package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
)

var (
	_ datasource.DataSource              = &HostInventoryDataSource{}
	_ datasource.DataSourceWithConfigure = &HostInventoryDataSource{}
)

// canaryProfile is the profile a canary run deploys.
const canaryProfile = "profile.sandbox-canary"

// NewHostInventoryDataSource is the data source constructor.
func NewHostInventoryDataSource() datasource.DataSource { return &HostInventoryDataSource{} }

// HostInventoryDataSource is sandboxer_host_inventory.
type HostInventoryDataSource struct {
	data *providerData
}

func (d *HostInventoryDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_host_inventory"
}

func (d *HostInventoryDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (d *HostInventoryDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m hostInventoryModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	h, err := d.data.hostOrDefault(m.Host.ValueString())
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("host"), "Unknown Host", err.Error())
		return
	}
	name := h.Host()
	m.Host = types.StringValue(name)
	m.blank()

	facts, err := d.data.registry.Facts(ctx, h)
	if err != nil {
		if !m.AllowUnreachable.ValueBool() {
			resp.Diagnostics.AddError("Unable to Inventory Host", fmt.Sprintf("Host %q: %v", name, err))
			return
		}
		m.Reachable, m.UnreachableReason = types.BoolValue(false), types.StringValue(err.Error())
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
		return
	}
	m.Reachable, m.UnreachableReason = types.BoolValue(true), types.StringValue("")
	m.OS, m.Arch, m.Kernel = types.StringValue(facts.OS), types.StringValue(facts.Arch), types.StringValue(facts.Kernel)
	m.CPUCount = types.Int64Value(int64(facts.CPUCount))
	m.MemoryTotal, m.MemoryAvailable = types.Int64Value(facts.MemoryTotal), types.Int64Value(facts.MemoryAvailable)
	m.DiskTotal, m.DiskFree = types.Int64Value(facts.DiskTotal), types.Int64Value(facts.DiskFree)
	m.Load1, m.Load5, m.Load15 = types.Float64Value(facts.Load1), types.Float64Value(facts.Load5), types.Float64Value(facts.Load15)
	m.DockerVersion, m.ComposeVersion = types.StringValue(facts.DockerVersion), types.StringValue(facts.ComposeVersion)
	m.StoreBytes, m.StoreSnapshots = types.Int64Value(facts.StoreBytes), types.Int64Value(int64(facts.StoreSnapshots))
	m.ReaperInstalled, m.ReaperScheduled = types.BoolValue(facts.ReaperInstalled), types.BoolValue(facts.ReaperScheduled)
	nodes := []attr.Value{}
	for _, n := range facts.SwarmNodes {
		nodes = append(nodes, types.ObjectValueMust(swarmNodeType.AttrTypes, map[string]attr.Value{
			"name": types.StringValue(n.Name), "state": types.StringValue(n.State),
			"availability": types.StringValue(n.Availability), "manager_status": types.StringValue(n.Manager),
		}))
	}
	m.SwarmNodes = types.ListValueMust(swarmNodeType, nodes)

	free, err := d.data.registry.FreeNetworks(ctx, h)
	if err != nil {
		resp.Diagnostics.AddError("Unable to Inventory Host", fmt.Sprintf("Host %q: %v", name, err))
		return
	}
	m.FreeNetworks = types.Int64Value(int64(free))

	list, err := d.data.registry.Sandboxes(ctx, h)
	if err != nil {
		resp.Diagnostics.AddError("Unable to Inventory Host", fmt.Sprintf("Host %q: %v", name, err))
		return
	}
	items := []attr.Value{}
	stale, unlimited := []string{}, []string{}
	var committed backends.Limits
	for _, s := range list {
		limits := backends.Limits{}
		if s.Sandbox.Limits != nil {
			limits = *s.Sandbox.Limits
		}
		committed = committed.Add(limits)
		if len(s.Sandbox.Services) > 0 && (limits.Memory == 0 || limits.CPUs == 0) {
			unlimited = append(unlimited, s.Sandbox.ID)
		}
		expires := ""
		if s.Sandbox.ExpiresAt != nil {
			expires = s.Sandbox.ExpiresAt.UTC().Format(time.RFC3339)
		}
		items = append(items, types.ObjectValueMust(inventorySandboxType.AttrTypes, map[string]attr.Value{
			"desired_state": types.StringValue(s.Sandbox.Desired()),
			"id":            types.StringValue(s.Sandbox.ID), "profile": types.StringValue(s.Sandbox.Profile),
			"extension": types.StringValue(s.Sandbox.Extension), "status": types.StringValue(s.Status.State),
			"created_at": types.StringValue(s.Sandbox.CreatedAt.UTC().Format(time.RFC3339)),
			"expires_at": types.StringValue(expires), "expired": types.BoolValue(s.Expired), "stale": types.BoolValue(s.Stale),
			"endpoints": reachOf(s.Status.Services, h.EndpointHost).endpoints,
			"policy":    types.StringValue(string(s.Sandbox.RulesOrNone().Policy.Level.Stricter(""))),
			"limits": types.ObjectValueMust(limitsObjectType.AttrTypes, map[string]attr.Value{
				"memory_bytes": types.Int64Value(limits.Memory), "cpus": types.Float64Value(limits.CPUs), "pids": types.Int64Value(limits.Pids),
			}),
		}))
		if s.Stale {
			stale = append(stale, s.Sandbox.ID)
		}
	}
	m.Sandboxes = types.ListValueMust(inventorySandboxType, items)
	v, diags := types.ListValueFrom(ctx, types.StringType, stale)
	resp.Diagnostics.Append(diags...)
	m.StaleSandboxIDs = v
	m.CommittedMemory, m.CommittedCPUs = types.Int64Value(committed.Memory), types.Float64Value(committed.CPUs)
	u, diags := types.ListValueFrom(ctx, types.StringType, unlimited)
	resp.Diagnostics.Append(diags...)
	m.Unlimited = u

	if m.RunCanary.ValueBool() {
		p, err := d.data.catalog.Get(canaryProfile)
		if err != nil {
			resp.Diagnostics.AddError("Unable to Run Canary", err.Error())
			return
		}
		res := d.data.registry.Canary(ctx, h, p)
		m.CanaryOK = types.BoolValue(res.OK)
		m.CanaryReadyMs = types.Int64Value(res.ReadyMs)
		if res.Err != nil {
			m.CanaryError = types.StringValue(res.Err.Error())
		}
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
