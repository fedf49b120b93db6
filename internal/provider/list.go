package provider

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// List resources (Terraform >= 1.14: `list` blocks in .tfquery.hcl files,
// `terraform query`): what lives on the provider's hosts, as identities
// ready for import blocks and, with include_resource, as the state an
// import would read, so `terraform query -generate-config-out` writes
// configuration that plans clean after the import. Listing only reads: one
// command per host for sandboxes (the host view refreshes share), one for
// snapshots (the store's manifests). Each list resource supplies what it
// lists (a hostListing); listing the hosts is the same for all.

// hostListing is what a list resource lists of each host (and cluster).
type hostListing[T any] struct {
	what string                                          // "Sandboxes": the error is "Unable to List Sandboxes"
	read func(context.Context, *hosts.Host) ([]T, error) // a host's items, in the order listed
	// readCluster, when set, lists a cluster's items too: clusters are
	// listed after the hosts, and a list block's host may name one.
	readCluster func(context.Context, *backends.Cluster) ([]T, error)
	keep        func(T) bool                              // the list block's filters
	result      func(host string, item T) list.ListResult // an item of a host (or cluster) as a result (listResult)
}

// listPlace is a host or a cluster a listing reads.
type listPlace[T any] struct {
	name string
	read func(context.Context) ([]T, error)
}

// stream is the results of the host (or cluster) the list block names, or
// of every host of the provider in name order, then every cluster; diags
// are the block's own (its config read), which stop the listing when they
// hold an error. The stream stops at Terraform's limit, and at the first
// place that cannot be read: the places after it are never read.
func (l hostListing[T]) stream(ctx context.Context, d *providerData, req list.ListRequest, host types.String, diags diag.Diagnostics) iter.Seq[list.ListResult] {
	if diags.HasError() {
		return list.ListResultsStreamDiagnostics(diags)
	}
	places, err := l.places(d, host.ValueString())
	if err != nil {
		diags.AddAttributeError(path.Root("host"), "Unknown Host", err.Error())
		return list.ListResultsStreamDiagnostics(diags)
	}
	return limited(req.Limit, func(push func(list.ListResult) bool) {
		for _, p := range places {
			items, err := p.read(ctx)
			if err != nil {
				var d diag.Diagnostics
				d.AddError("Unable to List "+l.what, fmt.Sprintf("Host %q: %v", p.name, err))
				push(list.ListResult{Diagnostics: d})
				return
			}
			for _, item := range items {
				if l.keep(item) && !push(l.result(p.name, item)) {
					return
				}
			}
		}
	})
}

// places are the host (or cluster) named, or every host and then every
// cluster of the provider, in name order.
func (l hostListing[T]) places(d *providerData, name string) ([]listPlace[T], error) {
	ofHost := func(h *hosts.Host) listPlace[T] {
		return listPlace[T]{h.Host(), func(ctx context.Context) ([]T, error) { return l.read(ctx, h) }}
	}
	ofCluster := func(c *backends.Cluster) listPlace[T] {
		return listPlace[T]{c.Name, func(ctx context.Context) ([]T, error) { return l.readCluster(ctx, c) }}
	}
	if c, ok := d.cluster(name); ok && l.readCluster != nil {
		return []listPlace[T]{ofCluster(c)}, nil
	}
	if name != "" {
		h, err := d.host(name)
		if err != nil {
			return nil, err
		}
		return []listPlace[T]{ofHost(h)}, nil
	}
	var all []listPlace[T]
	for _, n := range slices.Sorted(maps.Keys(d.hosts)) {
		all = append(all, ofHost(d.hosts[n]))
	}
	if l.readCluster != nil {
		for _, n := range slices.Sorted(maps.Keys(d.clusters)) {
			all = append(all, ofCluster(d.clusters[n]))
		}
	}
	return all, nil
}

// listResult is one listed instance: its identity (host and id), the name
// people read, and, with include_resource, the state an import of it
// reads, which imported makes (with the timeouts block unset).
func listResult(ctx context.Context, req list.ListRequest, host, id, display string,
	imported func(timeouts.Value, *diag.Diagnostics) any) list.ListResult {
	r := req.NewListResult(ctx)
	r.DisplayName = display
	setIdentity(ctx, r.Identity, types.StringValue(host), types.StringValue(id), &r.Diagnostics)
	if !req.IncludeResource {
		return r
	}
	state := imported(nullTimeouts(ctx, req, &r.Diagnostics), &r.Diagnostics)
	r.Diagnostics.Append(r.Resource.Set(ctx, state)...)
	return r
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

// listBase is what every list resource has the same: its type name (after
// the provider's) and the provider's data.
type listBase struct {
	name string
	data *providerData
}

func (l *listBase) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + l.name
}

func (l *listBase) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	l.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}
