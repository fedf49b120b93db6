package provider

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
)

// Host pools (backends/placement.go decides). A sandbox whose host comes
// from a pool is planned with its host unknown and placed when it is
// created: Terraform plans every resource again in the apply's own
// provider process and refuses a value known at plan that differs then,
// and live capacity changes between the two (by the apply's own creates
// first of all), while sandboxes of a count with the same arguments cannot
// be told apart to give each the host it was shown. What the plan can
// promise it checks: the pool exists and is not full, counting what this
// plan places, with a warning for each host it had to skip.
//
// Each provider process (a plan, an apply) reads the capacity of a pool's
// hosts once, in parallel, the first time it needs them, before any of its
// creates; it then counts what it places itself. So the plan's full-pool
// check gives the apply's plan the same answer, and the creates of one
// apply spread over the pool.

// capacityReadTimeout bounds the read of a pool host's capacity (dial
// included): a host that does not answer within it is skipped.
const capacityReadTimeout = 30 * time.Second

// poolModel is a provider `pool` block.
type poolModel struct {
	Name            types.String `tfsdk:"name"`
	MinFreeMemoryMB types.Int64  `tfsdk:"min_free_memory_mb"`
}

// hostPool is a pool as configured.
type hostPool struct {
	name            string
	minFreeMemoryMB int64
	hosts           []string // sorted
	declared        bool     // a pool block configured it
}

// poolMember is what a host (or cluster) block says about its place in a
// pool.
type poolMember struct {
	labels       map[string]string
	maxSandboxes int
	cluster      bool // a cluster block: it takes the sandboxes of cluster profiles only
}

// placer places sandboxes in pools for one provider process.
type placer struct {
	pools   map[string]*hostPool
	members map[string]poolMember
	// capacity is each host's capacity, read once, by host name. A failed
	// read is kept too: the host is skipped, not waited for again.
	capacity backends.Flight[string, backends.Capacity]

	mu      sync.Mutex
	planned map[string]int // host -> sandboxes this process planned there
	created map[string]int // host -> sandboxes this process created there
}

func newPlacer() *placer {
	return &placer{pools: map[string]*hostPool{}, members: map[string]poolMember{}, planned: map[string]int{}, created: map[string]int{},
		capacity: backends.Flight[string, backends.Capacity]{What: "capacity read", Keep: backends.Forever, KeepFailures: backends.Forever, Timeout: capacityReadTimeout}}
}

// addHost adds a host (or cluster) block's pool membership.
func (p *placer) addHost(name, pool string, m poolMember) {
	p.members[name] = m
	if pool == "" {
		return
	}
	hp := p.pools[pool]
	if hp == nil {
		hp = &hostPool{name: pool}
		p.pools[pool] = hp
	}
	hp.hosts = append(hp.hosts, name)
	slices.Sort(hp.hosts)
}

// place chooses a host of pool for one sandbox requiring labels, counting
// it in planned (a plan) or created (a create) of this process. A sandbox
// of a cluster extension (kube) is placed on the pool's clusters, any
// other on its hosts.
func (d *providerData) place(ctx context.Context, pool string, labels map[string]string, kube, create bool) (backends.Placement, error) {
	p := d.placer
	hp, ok := p.pools[pool]
	if !ok {
		return backends.Placement{}, fmt.Errorf("pool %q is not named by any host or cluster block (pools: %s)", pool, strings.Join(slices.Sorted(maps.Keys(p.pools)), ", "))
	}
	members := slices.DeleteFunc(slices.Clone(hp.hosts), func(n string) bool { return p.members[n].cluster != kube })
	if len(members) == 0 {
		what, profile := "host", "host profiles'"
		if kube {
			what, profile = "cluster", "profile.compose-k8s's"
		}
		return backends.Placement{}, fmt.Errorf("pool %q has no %s block, where %s sandboxes go (its members: %s)", pool, what, profile, strings.Join(hp.hosts, ", "))
	}
	// The capacity of every member of the pool, read in parallel, once.
	// The read serves every placement of the process: it outlives the
	// request that happens to start it, within a bound of its own.
	caps := make([]backends.Capacity, len(members))
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for i, name := range members {
		wg.Go(func() {
			caps[i], errs[i] = p.capacity.Do(ctx, name, func(ctx context.Context) (backends.Capacity, error) {
				if c, ok := d.cluster(name); ok {
					return d.kube.Capacity(ctx, c)
				}
				h, err := d.host(name)
				if err != nil {
					return backends.Capacity{}, err
				}
				return backends.ReadCapacity(ctx, h)
			})
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return backends.Placement{}, err
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	count := p.planned
	if create {
		count = p.created
	}
	cands := make([]backends.Candidate, len(members))
	for i, name := range members {
		m := p.members[name]
		cands[i] = backends.Candidate{Host: name, Labels: m.labels, MaxSandboxes: m.maxSandboxes,
			Capacity: caps[i], Err: errs[i], Placed: count[name]}
	}
	placement, err := backends.Place(cands, backends.PoolRule{Pool: pool, MinFreeMemoryMB: hp.minFreeMemoryMB, Labels: labels})
	if err == nil {
		count[placement.Host]++
	}
	return placement, err
}

// uncountReplaced takes the sandbox that a replacement takes the place of
// off what a plan counts on host: it still exists while the plan reads
// the pool, and is destroyed before its replacement is created.
// (Terraform then plans the replacement as a create, which place counts.)
func (d *providerData) uncountReplaced(host string) {
	p := d.placer
	p.mu.Lock()
	defer p.mu.Unlock()
	p.planned[host]--
}

// uncountDestroyed takes a sandbox this process destroyed on host off its
// counts when the host's capacity was read (or is being read): that read
// counted it (an apply that replaces a pool sandbox destroys it before it
// creates the replacement).
func (d *providerData) uncountDestroyed(ctx context.Context, host string) {
	p := d.placer
	if _, read, _ := p.capacity.Peek(ctx, host); !read {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.planned[host]--
	p.created[host]--
}

// configurePools reads the pool blocks and the pool settings of host blocks.
func configurePools(cfg *providerModel, data *providerData, diags *diag.Diagnostics) {
	p := newPlacer()
	for i, hm := range cfg.Hosts {
		at := path.Root("host").AtListIndex(i)
		maxSandboxes := 0
		if !hm.MaxSandboxes.IsNull() {
			if n := hm.MaxSandboxes.ValueInt64(); n < 1 {
				diags.AddAttributeError(at.AtName("max_sandboxes"), "Invalid Maximum", fmt.Sprintf("host %q: max_sandboxes must be at least 1", hm.Name.ValueString()))
			} else {
				maxSandboxes = int(n)
			}
		}
		labels := map[string]string{}
		diags.Append(hm.Labels.ElementsAs(context.Background(), &labels, false)...)
		p.addHost(hm.Name.ValueString(), hm.Pool.ValueString(), poolMember{labels: labels, maxSandboxes: maxSandboxes})
	}
	for i, cm := range cfg.Clusters {
		if _, ok := data.clusters[cm.Name.ValueString()]; !ok {
			continue // unusable: said by configureClusters
		}
		maxSandboxes := 0
		if !cm.MaxSandboxes.IsNull() {
			if n := cm.MaxSandboxes.ValueInt64(); n < 1 {
				diags.AddAttributeError(path.Root("cluster").AtListIndex(i).AtName("max_sandboxes"), "Invalid Maximum",
					fmt.Sprintf("cluster %q: max_sandboxes must be at least 1", cm.Name.ValueString()))
			} else {
				maxSandboxes = int(n)
			}
		}
		labels := map[string]string{}
		diags.Append(cm.Labels.ElementsAs(context.Background(), &labels, false)...)
		p.addHost(cm.Name.ValueString(), cm.Pool.ValueString(), poolMember{labels: labels, maxSandboxes: maxSandboxes, cluster: true})
	}
	for i, pm := range cfg.Pools {
		at := path.Root("pool").AtListIndex(i)
		hp, ok := p.pools[pm.Name.ValueString()]
		if !ok {
			diags.AddAttributeError(at.AtName("name"), "Pool Without Hosts",
				fmt.Sprintf("pool %q: no host block names it (set pool = %q in the host blocks of its hosts)", pm.Name.ValueString(), pm.Name.ValueString()))
			continue
		}
		if hp.declared {
			diags.AddAttributeError(at.AtName("name"), "Duplicate Pool", fmt.Sprintf("pool %q is declared twice", hp.name))
			continue
		}
		hp.declared = true
		if hp.minFreeMemoryMB = pm.MinFreeMemoryMB.ValueInt64(); hp.minFreeMemoryMB < 0 {
			diags.AddAttributeError(at.AtName("min_free_memory_mb"), "Invalid Memory Floor", fmt.Sprintf("pool %q: min_free_memory_mb must not be negative", hp.name))
		}
	}
	data.placer = p
}
