package provider

import (
	"context"
	"fmt"
	"net/url"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/clusters"
)

// Kubernetes clusters as placement targets (ADR 0009): a cluster block
// names a cluster as a host block names a host, and a sandbox of
// profile.compose-k8s names it in `host`.

// clusterModel is a cluster block.
type clusterModel struct {
	Name            types.String `tfsdk:"name"`
	KubeconfigFile  types.String `tfsdk:"kubeconfig_file"`
	Context         types.String `tfsdk:"context"`
	NamespacePrefix types.String `tfsdk:"namespace_prefix"`
	StorageClass    types.String `tfsdk:"storage_class"`
	NodeAddress     types.String `tfsdk:"node_address"`
	HelperImage     types.String `tfsdk:"helper_image"`
	// Pool, MaxSandboxes and Labels place sandboxes (pools.go), as a
	// host block's do.
	Pool         types.String `tfsdk:"pool"`
	MaxSandboxes types.Int64  `tfsdk:"max_sandboxes"`
	Labels       types.Map    `tfsdk:"labels"`
	hostRulesModel
}

// Defaults of a cluster block.
const (
	defaultNamespacePrefix = "sbx"
	defaultHelperImage     = "busybox:1.36"
)

// namespacePrefixPattern: a DNS label's start, short enough that
// "<prefix>-<12-digit id>" is one (63 characters at most).
var namespacePrefixPattern = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$`)

func clusterBlock() schema.Block {
	attrs := map[string]schema.Attribute{
		"name": schema.StringAttribute{Required: true,
			MarkdownDescription: "Name sandboxes give in `host` to run on this cluster; unique among host and cluster blocks."},
		"kubeconfig_file": schema.StringAttribute{Optional: true,
			MarkdownDescription: "Kubeconfig to read, as kubectl reads it (exec plugins included). Default: `$KUBECONFIG`, else `~/.kube/config`."},
		"context": schema.StringAttribute{Optional: true,
			MarkdownDescription: "Context of the kubeconfig. Default: its current context."},
		"namespace_prefix": schema.StringAttribute{Optional: true,
			Validators: []validator.String{stringvalidator.RegexMatches(namespacePrefixPattern,
				"must be lowercase letters, digits and '-', start with a letter, and be at most 40 characters")},
			MarkdownDescription: "Each sandbox gets the namespace `<namespace_prefix>-<sandbox id>`. Default `" + defaultNamespacePrefix + "`."},
		"storage_class": schema.StringAttribute{Optional: true,
			MarkdownDescription: "Storage class of the sandboxes' claims (named volumes and the repo's files). Default: the cluster's " +
				"default class. A class the cluster lacks fails the create before anything is made."},
		"node_address": schema.StringAttribute{Optional: true,
			MarkdownDescription: "Address of a node where clients reach published ports (NodePorts): `endpoints` say `<node_address>:<nodePort>`. " +
				"Default: the API server's host."},
		"helper_image": schema.StringAttribute{Optional: true,
			MarkdownDescription: "Image of the short-lived pod that uploads the repo's files into the sandbox's claim: any image with " +
				"`sh` and `tar` the nodes have or can pull. Default `" + defaultHelperImage + "`."},
	}
	attrs["pool"] = schema.StringAttribute{Optional: true,
		MarkdownDescription: "Pool this cluster belongs to, beside hosts: a sandbox of `profile.compose-k8s` with `host_pool` goes to " +
			"the pool's cluster with the most headroom (free sandbox slots, and memory and CPUs its nodes' pods have not requested); " +
			"a sandbox of a host profile goes to the pool's hosts."}
	attrs["max_sandboxes"] = schema.Int64Attribute{Optional: true,
		MarkdownDescription: "Most sandboxes (namespaces of `namespace_prefix`) pool placement puts on this cluster. Unset: no limit."}
	attrs["labels"] = schema.MapAttribute{Optional: true, ElementType: types.StringType,
		MarkdownDescription: "Labels pool placement matches against a sandbox's `host_labels`."}
	addHostRulesAttributes(attrs)
	return schema.ListNestedBlock{
		MarkdownDescription: "A Kubernetes cluster sandboxes of `profile.compose-k8s` run on, a namespace each, reached through its " +
			"API server with client-go: its nodes need no SSH and no docker. `policy`, the `allowed_*` lists and the limits are " +
			"as on a host block.",
		NestedObject: schema.NestedBlockObject{Attributes: attrs},
	}
}

// configureClusters connects the cluster blocks (nothing is sent until a
// sandbox needs the cluster). A block that cannot be used is, as a host
// block, a warning, and an error for whatever uses it.
func configureClusters(ctx context.Context, cfg *providerModel, data *providerData, diags *diag.Diagnostics) {
	data.clusters = map[string]*backends.Cluster{}
	for i, cm := range cfg.Clusters {
		name := cm.Name.ValueString()
		at := path.Root("cluster").AtListIndex(i)
		if _, dup := data.hosts[name]; dup || data.clusters[name] != nil || data.unusable[name] != nil {
			diags.AddAttributeError(at.AtName("name"), "Duplicate Host", fmt.Sprintf("%q names two host or cluster blocks", name))
			continue
		}
		c, err := clusters.Connect(clusters.Config{Name: name, KubeconfigFile: cm.KubeconfigFile.ValueString(), Context: cm.Context.ValueString()})
		if err != nil {
			data.unusable[name] = fmt.Errorf("cluster %q cannot be used: its block in the provider configuration (cluster[%d]) is broken: %w", name, i, err)
			diags.AddAttributeWarning(at.AtName("kubeconfig_file"), "Cluster Not Usable",
				fmt.Sprintf("%v\n\nEverything not on cluster %q works; anything on it fails until its block is fixed.", err, name))
			continue
		}
		rules, err := readHostRules(ctx, cm.hostRulesModel, diags)
		if err != nil {
			diags.AddAttributeError(at, "Invalid Cluster Limits", fmt.Sprintf("cluster %q: %v", name, err))
			continue
		}
		data.rules[name] = rules
		node := cm.NodeAddress.ValueString()
		if node == "" {
			if u, err := url.Parse(c.REST.Host); err == nil && u.Hostname() != "" {
				node = u.Hostname()
			}
		}
		data.clusters[name] = &backends.Cluster{Cluster: c, NodeAddress: node,
			NamespacePrefix: stringOr(cm.NamespacePrefix, defaultNamespacePrefix),
			StorageClass:    cm.StorageClass.ValueString(),
			HelperImage:     stringOr(cm.HelperImage, defaultHelperImage)}
	}
}

// cluster is the cluster a sandbox's host names, if it names one.
func (d *providerData) cluster(host string) (*backends.Cluster, bool) {
	c, ok := d.clusters[host]
	return c, ok
}
