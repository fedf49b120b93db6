package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// sandboxer_host_inventory: the data source's schema and model.

type hostInventoryModel struct {
	Host              types.String  `tfsdk:"host"`
	RunCanary         types.Bool    `tfsdk:"run_canary"`
	AllowUnreachable  types.Bool    `tfsdk:"allow_unreachable"`
	Reachable         types.Bool    `tfsdk:"reachable"`
	UnreachableReason types.String  `tfsdk:"unreachable_reason"`
	OS                types.String  `tfsdk:"os"`
	Arch              types.String  `tfsdk:"arch"`
	Kernel            types.String  `tfsdk:"kernel"`
	CPUCount          types.Int64   `tfsdk:"cpu_count"`
	MemoryTotal       types.Int64   `tfsdk:"memory_total_bytes"`
	MemoryAvailable   types.Int64   `tfsdk:"memory_available_bytes"`
	DiskTotal         types.Int64   `tfsdk:"disk_total_bytes"`
	DiskFree          types.Int64   `tfsdk:"disk_free_bytes"`
	Load1             types.Float64 `tfsdk:"load_1"`
	Load5             types.Float64 `tfsdk:"load_5"`
	Load15            types.Float64 `tfsdk:"load_15"`
	DockerVersion     types.String  `tfsdk:"docker_version"`
	ComposeVersion    types.String  `tfsdk:"compose_version"`
	Sandboxes         types.List    `tfsdk:"sandboxes"`
	StaleSandboxIDs   types.List    `tfsdk:"stale_sandbox_ids"`
	StoreBytes        types.Int64   `tfsdk:"store_bytes"`
	StoreSnapshots    types.Int64   `tfsdk:"store_snapshot_count"`
	FreeNetworks      types.Int64   `tfsdk:"free_sandbox_networks"`
	ReaperInstalled   types.Bool    `tfsdk:"reaper_installed"`
	ReaperScheduled   types.Bool    `tfsdk:"reaper_scheduled"`
	CanaryOK          types.Bool    `tfsdk:"canary_ok"`
	CanaryReadyMs     types.Int64   `tfsdk:"canary_ready_ms"`
	CanaryError       types.String  `tfsdk:"canary_error"`
	SwarmNodes        types.List    `tfsdk:"swarm_nodes"`
	CommittedMemory   types.Int64   `tfsdk:"committed_memory_bytes"`
	CommittedCPUs     types.Float64 `tfsdk:"committed_cpus"`
	Unlimited         types.List    `tfsdk:"unlimited_sandbox_ids"`
}

var swarmNodeType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"name": types.StringType, "state": types.StringType, "availability": types.StringType, "manager_status": types.StringType,
}}

var inventorySandboxType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"id": types.StringType, "profile": types.StringType, "extension": types.StringType, "status": types.StringType,
	"desired_state": types.StringType, "created_at": types.StringType, "expires_at": types.StringType, "expired": types.BoolType, "stale": types.BoolType,
	"endpoints": types.MapType{ElemType: types.StringType},
	"policy":    types.StringType, "limits": limitsObjectType,
}}

// limitsObjectType is what a sandbox's services may use together.
var limitsObjectType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"memory_bytes": types.Int64Type, "cpus": types.Float64Type, "pids": types.Int64Type,
}}

func (d *HostInventoryDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	str := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: desc}
	}
	i64 := func(desc string) schema.Int64Attribute {
		return schema.Int64Attribute{Computed: true, MarkdownDescription: desc}
	}
	f64 := func(desc string) schema.Float64Attribute {
		return schema.Float64Attribute{Computed: true, MarkdownDescription: desc}
	}
	boolean := func(desc string) schema.BoolAttribute {
		return schema.BoolAttribute{Computed: true, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "What runs where: a host's facts, its sandboxes (from the records they leave on it) with their live " +
			"status, the stale ones, checkpoint store usage, and optionally a canary run that proves the host can create, " +
			"ready and tear down a compose stack.",
		Attributes: map[string]schema.Attribute{
			"host": schema.StringAttribute{Optional: true, Computed: true,
				MarkdownDescription: "Host to inspect. Default: the provider's default host, else `local`."},
			"run_canary": schema.BoolAttribute{Optional: true,
				MarkdownDescription: "Deploy `profile.sandbox-canary` on the host, time create → ready, and tear it down. Nothing of it remains, whatever happens."},
			"allow_unreachable": schema.BoolAttribute{Optional: true,
				MarkdownDescription: "An unreachable host gives `reachable = false` and `unreachable_reason` instead of failing the plan."},
			"reachable":              boolean("Whether the host answered."),
			"unreachable_reason":     str("Why it did not, when it did not."),
			"os":                     str("Operating system (`uname -s`, lower case)."),
			"arch":                   str("Machine architecture (`uname -m`)."),
			"kernel":                 str("Kernel release (`uname -r`)."),
			"cpu_count":              i64("Online CPUs (`nproc`)."),
			"memory_total_bytes":     i64("Total memory."),
			"memory_available_bytes": i64("Available memory."),
			"disk_total_bytes":       i64("Size of the filesystem holding `root_dir`."),
			"disk_free_bytes":        i64("Free space there (for unprivileged users, as `df` reports)."),
			"load_1":                 f64("Load average over 1 minute."),
			"load_5":                 f64("Load average over 5 minutes."),
			"load_15":                f64("Load average over 15 minutes."),
			"docker_version":         str("Docker engine version (empty without docker)."),
			"compose_version":        str("Compose version (empty without compose)."),
			"free_sandbox_networks": i64("How many more compose sandbox networks of the default size (/27) fit in the host's " +
				"`network_pool`, given the subnets its sandboxes and other docker networks hold. Each network of a compose sandbox takes one."),
			"sandboxes": schema.ListAttribute{Computed: true, ElementType: inventorySandboxType,
				MarkdownDescription: "Sandboxes recorded on the host: `id`, `profile`, `extension`, `status`, `desired_state` (`running`, or `stopped`: " +
					"a sandbox stopped on purpose is not stale), `created_at`, `expires_at`, `expired`, `stale`, " +
					"`endpoints` (as the sandbox resource's: `\"<service>:<target>\"` to `\"<endpoint_host>:<published>\"`), " +
					"`policy` (the level it was created under) and `limits`: what its containers may use together (`memory_bytes`, " +
					"`cpus`, `pids`: each service's limits times its replicas; 0 where a service has none)."},
			"committed_memory_bytes": i64("Sum of the sandboxes' `limits.memory_bytes`, to hold against `memory_total_bytes`: " +
				"above it, the host is overcommitted should every sandbox use what it may."),
			"committed_cpus": f64("Sum of the sandboxes' `limits.cpus`, to hold against `cpu_count`."),
			"unlimited_sandbox_ids": schema.ListAttribute{Computed: true, ElementType: types.StringType,
				MarkdownDescription: "Sandboxes with a service without a memory or CPU limit: their use has no bound, and the " +
					"committed sums leave them out. A host block's `default_limits` gives every service one."},
			"stale_sandbox_ids": schema.ListAttribute{Computed: true, ElementType: types.StringType,
				MarkdownDescription: "Expired sandboxes, half-dead ones (a workspace without its services, or services without their workspace), and " +
					"abandoned ones: a create that never finished (the provider killed, the host unreachable for good) once its create deadline has passed. " +
					"The host's reaper removes expired and abandoned ones."},
			"store_bytes":          i64("Size of the host's checkpoint store."),
			"store_snapshot_count": i64("Snapshots in it."),
			"reaper_installed":     boolean("The TTL reaper's script is installed under `root_dir/.sandboxer/bin` (see the host's `reaper` argument)."),
			"reaper_scheduled":     boolean("The crontab of the host's user has the line that runs that reaper every minute."),
			"canary_ok":            boolean("Canary result (null without `run_canary`)."),
			"canary_ready_ms":      i64("Canary create → ready, in milliseconds."),
			"canary_error":         str("Why the canary failed, when it did."),
			"swarm_nodes": schema.ListAttribute{Computed: true, ElementType: swarmNodeType,
				MarkdownDescription: "When the host is a Docker Swarm manager (the host of `ext.swarm` sandboxes), the swarm's nodes: `name` " +
					"(hostname), `state` (`ready`, `down`, ...), `availability` (`active`, `pause`, `drain`) and `manager_status` " +
					"(`leader`, `reachable`, `unreachable`; empty for a worker). Empty on other hosts."},
		},
	}
}

// blank gives every computed attribute a known empty value, so an
// unreachable host still yields a complete (if empty) inventory.
func (m *hostInventoryModel) blank() {
	for _, s := range []*types.String{&m.UnreachableReason, &m.OS, &m.Arch, &m.Kernel, &m.DockerVersion, &m.ComposeVersion, &m.CanaryError} {
		*s = types.StringValue("")
	}
	for _, n := range []*types.Int64{&m.CPUCount, &m.MemoryTotal, &m.MemoryAvailable, &m.DiskTotal, &m.DiskFree, &m.StoreBytes, &m.StoreSnapshots, &m.FreeNetworks, &m.CanaryReadyMs} {
		*n = types.Int64Value(0)
	}
	m.Load1, m.Load5, m.Load15 = types.Float64Value(0), types.Float64Value(0), types.Float64Value(0)
	m.Sandboxes = types.ListValueMust(inventorySandboxType, []attr.Value{})
	m.StaleSandboxIDs = types.ListValueMust(types.StringType, []attr.Value{})
	m.SwarmNodes = types.ListValueMust(swarmNodeType, []attr.Value{})
	m.CommittedMemory, m.CommittedCPUs = types.Int64Value(0), types.Float64Value(0)
	m.Unlimited = types.ListValueMust(types.StringType, []attr.Value{})
	m.CanaryOK = types.BoolNull()
	m.ReaperInstalled, m.ReaperScheduled = types.BoolValue(false), types.BoolValue(false)
}
