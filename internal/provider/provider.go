// Package provider is the Terraform layer only: schemas, models, mapping to
// backend calls and diagnostics. It runs no shell and opens no connection
// itself; everything on a host goes through internal/backends.
//
// Files follow the type names (sandbox, snapshot, restore, reap, profile,
// host_inventory, snapshots, snapshot_diff, tunnel): <name>_model.go holds
// every schema of the name and the models (tfsdk structs) they are read
// into, with their filling from what backends return; <name>_resource.go,
// _action.go, _list.go, _data_source.go and _ephemeral.go hold each kind's
// methods (the sandbox resource's ModifyPlan is sandbox_plan.go);
// <name>_service.go holds what the name's resource and action both do on
// hosts, one function per operation, and schema.go makes an action's
// arguments from its resource's. list.go is the listing every list resource
// shares; values.go the value conversions every model uses.
package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/ephemeral"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/composek8s"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/composessh"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/saasstub"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/swarm"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/vmattach"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/events"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/safepath"
)

var (
	_ provider.Provider                  = &SandboxerProvider{}
	_ provider.ProviderWithActions       = &SandboxerProvider{}
	_ provider.ProviderWithListResources = &SandboxerProvider{}
	// Ephemeral resources: Terraform >= 1.10, OpenTofu >= 1.11.
	_ provider.ProviderWithEphemeralResources = &SandboxerProvider{}
)

// SandboxerProvider is the provider implementation.
type SandboxerProvider struct {
	version string

	// configured is the last configuration's data: configured again (a
	// test's next step, a long-lived server), the provider closes the
	// connections of the one before.
	mu         sync.Mutex
	configured *providerData
}

// New returns a provider constructor for providerserver.
func New(version string) func() provider.Provider {
	return func() provider.Provider { return &SandboxerProvider{version: version} }
}

// providerModel is the provider block.
type providerModel struct {
	DefaultHost    types.String   `tfsdk:"default_host"`
	ComposeCommand types.String   `tfsdk:"compose_command"`
	ProfilesDir    types.String   `tfsdk:"profiles_dir"`
	CreditsFile    types.String   `tfsdk:"credits_file"`
	EventsURL      types.String   `tfsdk:"events_url"`
	EventsSecret   types.String   `tfsdk:"events_secret"`
	Actor          types.String   `tfsdk:"actor"`
	Hosts          []hostModel    `tfsdk:"host"`
	Clusters       []clusterModel `tfsdk:"cluster"`
	Pools          []poolModel    `tfsdk:"pool"`
}

type hostModel struct {
	Name    types.String `tfsdk:"name"`
	Local   types.Bool   `tfsdk:"local"`
	RootDir types.String `tfsdk:"root_dir"`
	Reaper  types.Bool   `tfsdk:"reaper"`
	// NetworkPool and MaxNetworkOperations are read by Configure for
	// ext.compose-ssh.
	NetworkPool          types.String `tfsdk:"network_pool"`
	MaxNetworkOperations types.Int64  `tfsdk:"max_network_operations"`
	// PublishAddress and EndpointHost: where compose sandboxes publish
	// ports, and where clients reach them.
	PublishAddress types.String `tfsdk:"publish_address"`
	EndpointHost   types.String `tfsdk:"endpoint_host"`
	// Pool, MaxSandboxes and Labels place sandboxes (pools.go).
	Pool         types.String `tfsdk:"pool"`
	MaxSandboxes types.Int64  `tfsdk:"max_sandboxes"`
	Labels       types.Map    `tfsdk:"labels"`
	hostRulesModel
	sshModel
	Bastion *sshModel `tfsdk:"bastion"`
}

// sshModel is how to reach a machine over SSH; shared by host and bastion.
type sshModel struct {
	Address               types.String `tfsdk:"address"`
	User                  types.String `tfsdk:"user"`
	PrivateKey            types.String `tfsdk:"private_key"`
	PrivateKeyFile        types.String `tfsdk:"private_key_file"`
	UseAgent              types.Bool   `tfsdk:"use_agent"`
	KnownHostsFile        types.String `tfsdk:"known_hosts_file"`
	HostKey               types.String `tfsdk:"host_key"`
	InsecureIgnoreHostKey types.Bool   `tfsdk:"insecure_ignore_host_key"`
}

// Default timeouts: compose stacks may build images on first start.
const (
	defaultCreateTimeout = 10 * time.Minute
	defaultDeleteTimeout = 5 * time.Minute
	defaultReadTimeout   = 2 * time.Minute
	// An update may start a stopped sandbox, which waits for readiness as
	// a create does.
	defaultUpdateTimeout = defaultCreateTimeout
)

// providerData is what resources and data sources receive in Configure.
type providerData struct {
	hosts map[string]*hosts.Host
	// clusters are the cluster blocks (clusters.go); kube runs the
	// sandboxes on them.
	clusters map[string]*backends.Cluster
	kube     backends.ClusterExtension
	// unusable are host blocks whose configuration is broken (a key file
	// that cannot be read, say): a plan that does not use them goes on
	// with a warning, and whatever uses one fails naming the attribute.
	unusable    map[string]error
	placer      *placer // host pools
	defaultHost string
	catalog     *catalog.Catalog
	registry    *backends.Registry
	events      *events.Sender            // nil without events_url
	rules       map[string]backends.Rules // by host name (host_rules.go)
}

// endpointHost is where clients reach the published ports of a host's
// sandboxes ("" for a host the configuration no longer has).
func (d *providerData) endpointHost(host string) string {
	if h, err := d.host(host); err == nil {
		return h.EndpointHost
	}
	return ""
}

// emit sends a lifecycle event; an event that cannot be delivered is a
// warning, never a failure.
func (d *providerData) emit(ctx context.Context, diags *diag.Diagnostics, e events.Event) {
	if err := d.events.Send(ctx, e); err != nil {
		diags.AddWarning("Lifecycle Event Not Delivered", err.Error())
	}
}

// destroySandbox tears a sandbox down and announces it: the one destroy
// path of sandboxer_sandbox and of a restore's new sandbox.
func (d *providerData) destroySandbox(ctx context.Context, diags *diag.Diagnostics, summary, hostName, id, profile string) {
	if c, ok := d.cluster(hostName); ok {
		if err := d.kube.Destroy(ctx, c, id); err != nil {
			diags.AddError(summary, fmt.Sprintf("Sandbox %s on cluster %q: %v", id, c.Name, err))
			return
		}
		d.uncountDestroyed(ctx, c.Name)
		d.emit(ctx, diags, events.Event{Event: events.SandboxDestroyed, SandboxID: id, Host: c.Name, Profile: profile})
		return
	}
	h, err := d.host(hostName)
	if err != nil {
		diags.AddError(summary, err.Error())
		return
	}
	if err := d.registry.Destroy(ctx, h, id); err != nil {
		diags.AddError(summary, fmt.Sprintf("Sandbox %s on host %q: %v", id, h.Host(), err))
		return
	}
	d.uncountDestroyed(ctx, h.Host())
	d.emit(ctx, diags, events.Event{Event: events.SandboxDestroyed, SandboxID: id, Host: h.Host(), Profile: profile})
}

// providerDataFrom is the checked type assertion of every resource's and
// data source's Configure. It returns nil before the provider is configured.
func providerDataFrom(pd any, diags *diag.Diagnostics) *providerData {
	if pd == nil {
		return nil
	}
	data, ok := pd.(*providerData)
	if !ok {
		diags.AddError("Unexpected Configure Type",
			fmt.Sprintf("Expected *providerData, got %T. Please report this issue to the provider developers.", pd))
	}
	return data
}

// host returns the named host with a diagnostic-ready error.
func (d *providerData) host(name string) (*hosts.Host, error) {
	if h, ok := d.hosts[name]; ok {
		return h, nil
	}
	if err, ok := d.unusable[name]; ok {
		return nil, err
	}
	if _, ok := d.clusters[name]; ok {
		return nil, fmt.Errorf("%q is a cluster: snapshots, restores, inventories and reaps are of hosts' sandboxes", name)
	}
	names := slices.Sorted(maps.Keys(d.hosts))
	return nil, fmt.Errorf("host %q is not declared in the provider block; declared hosts: %s", name, strings.Join(names, ", "))
}

// likelyHost is the SSH host this walk most likely reaches: the default
// host, else the only one declared; nil when that is not an SSH host or
// there is no such host. Configure warms it (hosts.Warm); any other host
// connects on its first command, so a configuration naming many hosts
// does not log in to each of them in every walk.
func (d *providerData) likelyHost() *hosts.Host {
	name := d.defaultHost
	if name == "" {
		for n, h := range d.hosts {
			if h.Local {
				continue
			}
			if name != "" {
				return nil // several: none is likelier
			}
			name = n
		}
	}
	h, ok := d.hosts[name]
	if !ok || h.Local {
		return nil
	}
	return h
}

// hostOrDefault is the named host, else the provider's default host, else
// local: the host of what is on one host that the configuration may leave
// unnamed (a reap, an inventory).
func (d *providerData) hostOrDefault(name string) (*hosts.Host, error) {
	if name == "" {
		name = d.defaultHost
	}
	if name == "" {
		name = catalog.LocalHost
	}
	return d.host(name)
}

func (p *SandboxerProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "sandboxer"
	resp.Version = p.version
}

func sshAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"address": schema.StringAttribute{Optional: true,
			MarkdownDescription: "`host:port` of the SSH server (an alias or a tunnel port is just another address)."},
		"user": schema.StringAttribute{Optional: true, MarkdownDescription: "SSH user."},
		"private_key": schema.StringAttribute{Optional: true, Sensitive: true,
			MarkdownDescription: "PEM private key for public-key authentication."},
		"private_key_file": schema.StringAttribute{Optional: true,
			MarkdownDescription: "Path of a PEM private key file, read when the provider is configured. A leading `~/` is the home directory of the user running Terraform, as in ssh."},
		"use_agent": schema.BoolAttribute{Optional: true,
			MarkdownDescription: "Also authenticate with the keys of the SSH agent at `SSH_AUTH_SOCK`."},
		"known_hosts_file": schema.StringAttribute{Optional: true,
			MarkdownDescription: "known_hosts file the host key is verified against. Default `~/.ssh/known_hosts`; a leading `~/` is the home directory of the user running Terraform."},
		"host_key": schema.StringAttribute{Optional: true,
			MarkdownDescription: "Pinned public host key in authorized_keys form (`ssh-ed25519 AAAA...`); takes precedence over `known_hosts_file`."},
		"insecure_ignore_host_key": schema.BoolAttribute{Optional: true,
			MarkdownDescription: "Skip host key verification. Default `false`; only for throwaway test hosts."},
	}
}

func (p *SandboxerProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	hostAttrs := sshAttributes()
	hostAttrs["name"] = schema.StringAttribute{Required: true,
		MarkdownDescription: "Name sandboxes use in their `host` argument."}
	hostAttrs["local"] = schema.BoolAttribute{Optional: true,
		MarkdownDescription: "Run on the machine running Terraform, without SSH."}
	hostAttrs["reaper"] = schema.BoolAttribute{Optional: true,
		MarkdownDescription: "`true`: install the host-side TTL reaper (a POSIX sh script under `root_dir/.sandboxer/bin`, plus a " +
			"crontab entry running it every minute where the host has cron) when a sandbox is first created there. It tears down " +
			"sandboxes whose `expires_at` has passed with nobody running Terraform, and touches nothing without a sandbox record. " +
			"`false`: remove that reaper and its crontab entry, if installed, at the same moment. Unset: leave the host as it is."}
	hostAttrs["network_pool"] = schema.StringAttribute{Optional: true,
		MarkdownDescription: "IPv4 CIDR from which each compose sandbox network on this host gets its own small subnet " +
			"(a /27 unless the profile's `network_prefix_length` says otherwise), so a host holds thousands of sandboxes instead of " +
			"the ~30 networks dockerd's default address pools allow. Default `" + composessh.DefaultNetworkPool.String() + "`, " +
			"outside docker's own pools; pick another if it overlaps a network the host reaches. A compose file's own subnets " +
			"and external networks are left alone."}
	hostAttrs["max_network_operations"] = schema.Int64Attribute{Optional: true,
		Validators: []validator.Int64{int64validator.AtLeast(1)},
		MarkdownDescription: fmt.Sprintf("Most operations that create or remove a compose sandbox's networks (its `compose up`, "+
			"its `compose down`) going on at once on this host under its `root_dir`, across Terraform runs; the others wait "+
			"their turn, within their timeouts. The engine changes networks one at a time behind locks of its own, so more at "+
			"once only wait there, and a large destroy can wedge it. Waiting for the services to be ready, and a destroy's stop "+
			"of the running containers, hold none. "+
			"Default %d.", composessh.DefaultNetworkOperations)}
	hostAttrs["publish_address"] = schema.StringAttribute{Optional: true,
		Validators: []validator.String{ipAddress()},
		MarkdownDescription: "Host address compose sandboxes publish their ports on when the compose file binds them to none, " +
			"e.g. `127.0.0.1` to keep them off the network. Default: all interfaces, as compose does. A sandbox with " +
			"`published_ports = \"as_written\"` keeps the file's ports as they are."}
	hostAttrs["endpoint_host"] = schema.StringAttribute{Optional: true,
		MarkdownDescription: "Name or address clients use to reach the host's published ports: the host part of sandboxes' " +
			"`endpoints` and `services[*].ports[*].address`. Default: the host part of `address` (`127.0.0.1` for a local host)."}
	hostAttrs["pool"] = schema.StringAttribute{Optional: true,
		MarkdownDescription: "Host pool this host belongs to: sandboxes with `host_pool` (or a profile placing them in the pool) " +
			"go to the pool's host with the most headroom when they are created. Not to be confused with `network_pool`."}
	hostAttrs["max_sandboxes"] = schema.Int64Attribute{Optional: true,
		MarkdownDescription: "Most sandboxes (records in `root_dir`) pool placement puts on this host. Unset: no limit."}
	hostAttrs["labels"] = schema.MapAttribute{Optional: true, ElementType: types.StringType,
		MarkdownDescription: "Labels pool placement matches against a sandbox's `host_labels`, e.g. `{ gpu = \"true\" }`."}
	addHostRulesAttributes(hostAttrs)
	hostAttrs["root_dir"] = schema.StringAttribute{Optional: true,
		MarkdownDescription: "Directory on the host under which sandboxes, their records and the checkpoint store live. " +
			"Default `~/.local/share/sandboxer` for local hosts and `sandboxer` (in the SSH user's home) for SSH hosts."}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Establishes disposable sandboxes — docker-compose stacks and workspaces on hosts reached " +
			"over SSH, or on this machine — with Terraform state as the only record on the client.",
		Attributes: map[string]schema.Attribute{
			"default_host": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Host used by sandboxes that set no `host`. Env `SANDBOXER_HOST`. Default: the profile's first placement host, else `local`."},
			"profiles_dir": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Directory of extra `profile.<name>.yaml` and `ext.<name>.yaml` files, in the built-ins' format. " +
					"A profile of the same name as a built-in replaces it. A broken file fails the plan naming the file and the field."},
			"credits_file": schema.StringAttribute{Optional: true,
				MarkdownDescription: "JSON credits ledger for metered profiles, e.g. `{\"balance_usd\": 25}`. Metered sandboxes are quoted " +
					"against it at plan time, hold their quote while they live and are debited for their measured lifetime on destroy."},
			"events_url": schema.StringAttribute{Optional: true, Sensitive: true,
				MarkdownDescription: "URL that receives a JSON POST for each lifecycle event (`sandbox.created`, `sandbox.ready`, " +
					"`sandbox.destroyed`, `snapshot.created`, `snapshot.deleted`, `restore.completed`). Delivery is retried within " +
					"5 seconds; an event that cannot be delivered is a warning, naming only the URL's scheme and host: a webhook URL " +
					"often carries its token, so it is sensitive."},
			"events_secret": schema.StringAttribute{Optional: true, Sensitive: true,
				MarkdownDescription: "Key of the `X-Sandboxer-Signature: sha256=<hex HMAC-SHA256 of the body>` header on events."},
			"actor": schema.StringAttribute{Optional: true,
				Validators:          []validator.String{stringvalidator.OneOf(events.Actors...)},
				MarkdownDescription: "Actor type stamped on events: `adm` (an administrator), `agt` (an agent) or `atm` (automation, the default)."},
			"compose_command": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Compose command on the hosts, e.g. `docker compose`, `docker-compose` or `podman-compose`. " +
					"Env `SANDBOXER_COMPOSE_CMD`. Default: detected per host (`docker compose`, then `docker-compose`, then `podman-compose`)."},
		},
		Blocks: map[string]schema.Block{
			"host": schema.ListNestedBlock{
				MarkdownDescription: "A host sandboxes can be placed on. A host named `local` with `local = true` exists by default.",
				NestedObject: schema.NestedBlockObject{
					Attributes: hostAttrs,
					Blocks: map[string]schema.Block{
						"bastion": schema.SingleNestedBlock{
							MarkdownDescription: "Jump host the SSH connection goes through.",
							Attributes:          sshAttributes(),
						},
					},
				},
			},
			"cluster": clusterBlock(),
			"pool": schema.ListNestedBlock{
				MarkdownDescription: "Settings of a host pool (the hosts whose `pool` names it). A pool needs no block of its own.",
				NestedObject: schema.NestedBlockObject{
					Attributes: map[string]schema.Attribute{
						"name": schema.StringAttribute{Required: true, MarkdownDescription: "The pool's name, as host blocks' `pool` give it."},
						"min_free_memory_mb": schema.Int64Attribute{Optional: true,
							MarkdownDescription: "Hosts with less memory available (`MemAvailable`) than this many MB count as full."},
					},
				},
			},
		},
	}
}

func (p *SandboxerProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var cfg providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	cat, err := catalog.Load(cfg.ProfilesDir.ValueString())
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("profiles_dir"), "Unable to Load Profiles", err.Error())
		return
	}
	compose := composessh.New(stringOr(cfg.ComposeCommand, os.Getenv("SANDBOXER_COMPOSE_CMD")))
	data := &providerData{
		hosts:       map[string]*hosts.Host{catalog.LocalHost: localHost(catalog.LocalHost, "")},
		unusable:    map[string]error{},
		defaultHost: stringOr(cfg.DefaultHost, os.Getenv("SANDBOXER_HOST")),
		catalog:     cat,
		registry:    newRegistry(compose),
		rules:       map[string]backends.Rules{},
	}
	data.events = events.New(cfg.EventsURL.ValueString(), cfg.EventsSecret.ValueString(), cfg.Actor.ValueString())
	if f := cfg.CreditsFile.ValueString(); f != "" {
		if err := data.registry.UseLedger(f); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("credits_file"), "Unable to Open Credits Ledger", err.Error())
			return
		}
	}
	seen := map[string]bool{}
	for i, hm := range cfg.Hosts {
		name := hm.Name.ValueString()
		at := path.Root("host").AtListIndex(i)
		if seen[name] {
			resp.Diagnostics.AddAttributeError(at.AtName("name"), "Duplicate Host", fmt.Sprintf("host %q is declared twice", name))
			continue
		}
		seen[name] = true
		h, err := buildTransport(hm)
		if err != nil {
			where := fmt.Sprintf("host[%d]", i)
			var ae *attrError
			if errors.As(err, &ae) {
				where += "." + ae.attr
				at = at.AtName(strings.Split(ae.attr, ".")[0])
			}
			data.unusable[name] = fmt.Errorf("host %q cannot be used: its block in the provider configuration (%s) is broken: %w", name, where, err)
			resp.Diagnostics.AddAttributeWarning(at, "Host Not Usable",
				fmt.Sprintf("%v\n\nSandboxes, snapshots and data sources on other hosts work; anything on host %q fails until its block (%s) is fixed.", err, name, where))
			continue
		}
		rules, err := readHostRules(ctx, hm.hostRulesModel, &resp.Diagnostics)
		if err != nil {
			var ae *attrError
			if errors.As(err, &ae) {
				at = at.AtName(strings.Split(ae.attr, ".")[0])
			}
			resp.Diagnostics.AddAttributeError(at, "Invalid Host Limits", fmt.Sprintf("host %q: %v", name, err))
			continue
		}
		data.rules[name] = rules
		h.PublishAddress = hm.PublishAddress.ValueString()
		if e := hm.EndpointHost.ValueString(); e != "" {
			h.EndpointHost = e
		}
		data.hosts[name] = h
		data.registry.SetReaper(name, reaperSetting(hm.Reaper))
		if pool := hm.NetworkPool.ValueString(); pool != "" {
			prefix, err := netip.ParsePrefix(pool)
			if err != nil || !prefix.Addr().Is4() || prefix.Bits() > 27 {
				resp.Diagnostics.AddAttributeError(at.AtName("network_pool"), "Invalid Network Pool",
					fmt.Sprintf("host %q: network_pool %q is not an IPv4 CIDR of at least one /27, such as 10.213.0.0/16", name, pool))
				continue
			}
			compose.NetworkPools[name] = prefix.Masked()
		}
		if n := hm.MaxNetworkOperations; !n.IsNull() && !n.IsUnknown() {
			compose.NetworkOperations[name] = int(n.ValueInt64())
		}
	}
	configureClusters(ctx, &cfg, data, &resp.Diagnostics)
	if data.kube, err = data.registry.ClusterExtension(); err != nil {
		resp.Diagnostics.AddError("Provider Misbuilt", err.Error())
		return
	}
	configurePools(&cfg, data, &resp.Diagnostics)
	checkPoolRules(data, &resp.Diagnostics)
	if _, isCluster := data.cluster(data.defaultHost); data.defaultHost != "" && !isCluster {
		if _, err := data.host(data.defaultHost); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("default_host"), "Unknown Default Host", err.Error())
		}
	}
	p.replaceConfiguration(data)
	if h := data.likelyHost(); h != nil {
		hosts.Warm(ctx, h)
	}
	resp.ResourceData = data
	resp.DataSourceData = data
	resp.ActionData = data
	resp.ListResourceData = data
	resp.EphemeralResourceData = data
}

// replaceConfiguration makes data the provider's configuration and closes
// the SSH connections of the one before: nothing uses them any more.
func (p *SandboxerProvider) replaceConfiguration(data *providerData) {
	p.mu.Lock()
	old := p.configured
	p.configured = data
	p.mu.Unlock()
	if old == nil {
		return
	}
	for _, h := range old.hosts {
		if c, ok := h.Transport.(io.Closer); ok {
			_ = c.Close() // a connection that would not close is gone anyway
		}
	}
}

func localHost(name, rootDir string) *hosts.Host {
	if rootDir == "" {
		rootDir = hosts.DefaultLocalRootDir()
	}
	return &hosts.Host{Transport: &hosts.Local{Name: name}, RootDir: rootDir, Local: true, EndpointHost: "127.0.0.1"}
}

// reaperSetting reads a host block's `reaper`: unset leaves the host alone.
func reaperSetting(v types.Bool) backends.ReaperSetting {
	switch {
	case v.IsNull() || v.IsUnknown():
		return backends.ReaperUnset
	case v.ValueBool():
		return backends.ReaperOn
	default:
		return backends.ReaperOff
	}
}

func buildTransport(hm hostModel) (*hosts.Host, error) {
	name := hm.Name.ValueString()
	if hm.Local.ValueBool() {
		if hm.Address.ValueString() != "" || hm.Bastion != nil {
			return nil, fmt.Errorf("host %q: a local host takes no address or bastion", name)
		}
		return localHost(name, hm.RootDir.ValueString()), nil
	}
	cfg, err := sshConfig(name, hm.sshModel)
	if err != nil {
		return nil, err
	}
	if hm.Bastion != nil {
		b, err := sshConfig(name+" (bastion)", *hm.Bastion)
		var ae *attrError
		if errors.As(err, &ae) {
			return nil, &attrError{"bastion." + ae.attr, ae.err}
		}
		if err != nil {
			return nil, err
		}
		cfg.Bastion = &b
	}
	tr, err := hosts.NewSSH(cfg)
	if err != nil {
		return nil, err
	}
	root := hm.RootDir.ValueString()
	if root == "" {
		root = hosts.DefaultRemoteRootDir
	}
	endpoint := cfg.Address
	if h, _, err := net.SplitHostPort(cfg.Address); err == nil {
		endpoint = h
	}
	return &hosts.Host{Transport: tr, RootDir: root, EndpointHost: endpoint}, nil
}

// attrError is a host block's problem with one of its attributes (its
// name relative to the block, "bastion.private_key_file" for a bastion's).
type attrError struct {
	attr string
	err  error
}

func (e *attrError) Error() string { return e.err.Error() }
func (e *attrError) Unwrap() error { return e.err }

func sshConfig(name string, m sshModel) (hosts.SSHConfig, error) {
	knownHosts, err := safepath.ExpandHome(m.KnownHostsFile.ValueString())
	if err != nil {
		return hosts.SSHConfig{}, &attrError{"known_hosts_file", fmt.Errorf("host %q: known_hosts_file: %w", name, err)}
	}
	cfg := hosts.SSHConfig{
		Name:                  name,
		Address:               m.Address.ValueString(),
		User:                  m.User.ValueString(),
		UseAgent:              m.UseAgent.ValueBool(),
		KnownHostsFile:        knownHosts,
		HostKey:               m.HostKey.ValueString(),
		InsecureIgnoreHostKey: m.InsecureIgnoreHostKey.ValueBool(),
	}
	switch {
	case m.PrivateKey.ValueString() != "" && m.PrivateKeyFile.ValueString() != "":
		return cfg, &attrError{"private_key_file", fmt.Errorf("host %q: set private_key or private_key_file, not both", name)}
	case m.PrivateKey.ValueString() != "":
		cfg.PrivateKey = []byte(m.PrivateKey.ValueString())
	case m.PrivateKeyFile.ValueString() != "":
		file, err := safepath.ExpandHome(m.PrivateKeyFile.ValueString())
		if err != nil {
			return cfg, &attrError{"private_key_file", fmt.Errorf("host %q: private_key_file: %w", name, err)}
		}
		key, err := os.ReadFile(file)
		if err != nil {
			return cfg, &attrError{"private_key_file", fmt.Errorf("host %q: unable to read private_key_file: %w", name, err)}
		}
		cfg.PrivateKey = key
	}
	return cfg, nil
}

func stringOr(v types.String, fallback string) string {
	if s := v.ValueString(); s != "" {
		return s
	}
	return fallback
}

func (p *SandboxerProvider) Resources(_ context.Context) []func() resource.Resource {
	return []func() resource.Resource{NewSandboxResource, NewSnapshotResource, NewRestoreResource, NewCommandResource}
}

// Actions are operations, not objects (Terraform >= 1.14: `action` blocks,
// `terraform apply -invoke`, `action_trigger`); other CLIs ignore them.
func (p *SandboxerProvider) Actions(_ context.Context) []func() action.Action {
	return []func() action.Action{NewReapAction, NewSnapshotAction, NewRestoreAction, NewExecAction, NewLogsAction, NewExtendAction}
}

// ListResources serve `terraform query` (Terraform >= 1.14); other CLIs
// never ask for them.
func (p *SandboxerProvider) ListResources(_ context.Context) []func() list.ListResource {
	return []func() list.ListResource{NewSandboxListResource, NewSnapshotListResource}
}

// EphemeralResources live for one Terraform run and never reach state
// (Terraform >= 1.10, OpenTofu >= 1.11; older CLIs reject the block).
func (p *SandboxerProvider) EphemeralResources(_ context.Context) []func() ephemeral.EphemeralResource {
	return []func() ephemeral.EphemeralResource{NewTunnelEphemeralResource}
}

func (p *SandboxerProvider) DataSources(_ context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{NewProfileDataSource, NewHostInventoryDataSource, NewSnapshotsDataSource, NewSnapshotDiffDataSource}
}

// newRegistry is the registry of every extension the provider implements;
// compose is ext.compose-ssh, which the provider configures further.
func newRegistry(compose *composessh.Extension) *backends.Registry {
	return backends.NewRegistry(compose, composek8s.New(), swarm.New(), vmattach.New(), saasstub.New())
}
