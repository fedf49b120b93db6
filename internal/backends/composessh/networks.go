package composessh

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// Every compose project creates bridge networks, and dockerd takes their
// subnets from its default address pools, which hold about 30 networks:
// past that, `compose up` fails. So the provider chooses each sandbox
// network's subnet itself, a small one (a /27 by default: 30 addresses)
// from a per-host pool that avoids docker's own defaults, and hands it to
// compose in an override file. A host then holds thousands of sandboxes.
//
// The choice is recorded on the host, one file per sandbox under
// <root>/.sandboxer/networks/<id>.yml, which is also the override compose
// reads: a sandbox's subnets are reserved from the moment they are chosen
// until its teardown, across provider processes. Choosing is optimistic:
// read what is taken (those files and every docker network's subnets),
// pick, then write the file under a lock after checking again; a collision
// with another provider process makes it pick again.

// DefaultNetworkPool is where sandbox networks get their subnets when a
// host block sets no network_pool: outside docker's default pools
// (172.17.0.0/12 and 192.168.0.0/16) and common LAN ranges.
var DefaultNetworkPool = netip.MustParsePrefix("10.213.0.0/16")

// defaultSubnetBits is the prefix length of a sandbox network unless the
// profile's `network_prefix_length` setting says otherwise.
const defaultSubnetBits = 27

// managedNetworks are the networks of a project whose subnets the provider
// chooses: bridge networks the stack creates that set no subnet of their
// own. External networks and a compose file's own subnets are left alone.
func managedNetworks(p *types.Project) []string {
	var out []string
	for name, n := range p.Networks {
		if n.External || (n.Driver != "" && n.Driver != "bridge") || len(n.Ipam.Config) > 0 {
			continue
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// subnetBits is the profile's network size.
func subnetBits(p *catalog.Profile) (int, error) {
	if p == nil || p.Settings["network_prefix_length"] == "" {
		return defaultSubnetBits, nil
	}
	n, err := strconv.Atoi(p.Settings["network_prefix_length"])
	if err != nil || n < 16 || n > 29 {
		return 0, fmt.Errorf("profile %s: network_prefix_length %q is not a number from 16 to 29", p.Name, p.Settings["network_prefix_length"])
	}
	return n, nil
}

// networkPool is one host's pool; mu keeps the provider's own concurrent
// creates on that host from reading the same free subnets.
type networkPool struct {
	mu     sync.Mutex
	prefix netip.Prefix
}

// pool returns the pool of a host.
func (e *Extension) pool(h *hosts.Host) *networkPool {
	prefix, ok := e.NetworkPools[h.Host()]
	if !ok {
		prefix = DefaultNetworkPool
	}
	v, _ := e.pools.LoadOrStore(h.Host(), &networkPool{prefix: prefix})
	p, ok := v.(*networkPool)
	if !ok {
		panic(fmt.Sprintf("composessh: network pool of type %T: only *networkPool is stored", v))
	}
	return p
}

// overrideFor is the absolute path of a sandbox's network override (and
// reservation): compose reads it after `cd` into the workspace, and a root
// dir may be relative to the SSH user's home. The workspace of a compose
// sandbox is <root>/<id>, resolved by the host.
func overrideFor(sb *backends.Sandbox) string {
	return path.Dir(sb.WorkspaceDir) + "/.sandboxer/networks/" + sb.ID + ".yml"
}

// overridePath is overrideFor, or below the host's root when the record
// lost its workspace (a teardown of what remains).
func overridePath(h *hosts.Host, sb *backends.Sandbox) string {
	if sb.WorkspaceDir != "" {
		return overrideFor(sb)
	}
	return h.Path(".sandboxer", "networks", sb.ID+".yml")
}

// takenScript prints every subnet in use on the host: the reservations of
// this root's sandboxes (their override files) and those of all docker
// networks, one per line. Networks of other roots or made by hand count too.
func takenScript(h *hosts.Host, engine string) string {
	dir := hosts.Quote(h.Path(".sandboxer", "networks"))
	return fmt.Sprintf(`for f in %[1]s/*.yml; do [ -f "$f" ] && sed -n 's/^ *- subnet: *//p' "$f"; done
ids=$(%[2]s network ls -q); if [ -n "$ids" ]; then %[2]s network inspect --format '{{range .IPAM.Config}}{{println .Subnet}}{{end}}' $ids; fi
`, dir, engine)
}

// parseTaken reads takenScript's output; a sandbox's subnet appears twice
// (its reservation and its docker network) and counts once.
func parseTaken(out string) []netip.Prefix {
	var taken []netip.Prefix
	seen := map[netip.Prefix]bool{}
	for _, line := range strings.Fields(out) {
		if p, err := netip.ParsePrefix(strings.Trim(line, `"'`)); err == nil && p.Addr().Is4() && !seen[p.Masked()] {
			seen[p.Masked()] = true
			taken = append(taken, p.Masked())
		}
	}
	return taken
}

// choose picks n free subnets of the given size from pool, lowest first.
func choose(pool netip.Prefix, bits, n int, taken []netip.Prefix) ([]netip.Prefix, error) {
	if bits < pool.Bits() {
		return nil, fmt.Errorf("network pool %s is smaller than one /%d sandbox network", pool, bits)
	}
	var out []netip.Prefix
	step := uint32(1) << (32 - bits)
	base := pool.Masked().Addr().As4()
	start := binary.BigEndian.Uint32(base[:])
	count := uint64(1) << (bits - pool.Bits())
	for i := uint64(0); i < count && len(out) < n; i++ {
		var a [4]byte
		binary.BigEndian.PutUint32(a[:], start+uint32(i)*step)
		cand := netip.PrefixFrom(netip.AddrFrom4(a), bits)
		if !overlapsAny(cand, taken) && !overlapsAny(cand, out) {
			out = append(out, cand)
		}
	}
	if len(out) < n {
		return nil, fmt.Errorf("network pool %s is full: no %d free /%d subnets left for this sandbox's networks "+
			"(set a larger network_pool on the host block, or destroy sandboxes)", pool, n, bits)
	}
	return out, nil
}

func overlapsAny(p netip.Prefix, set []netip.Prefix) bool {
	for _, q := range set {
		if p.Overlaps(q) {
			return true
		}
	}
	return false
}

// FreeNetworks is how many more sandbox networks of the default size fit
// in a host's pool, given the subnets taken there.
func FreeNetworks(pool netip.Prefix, taken []netip.Prefix) int {
	total := 1 << (defaultSubnetBits - pool.Bits())
	used := 0
	for _, t := range taken {
		if !t.Overlaps(pool) {
			continue
		}
		if t.Bits() >= defaultSubnetBits {
			used++
		} else if t.Bits() >= pool.Bits() {
			used += 1 << (defaultSubnetBits - t.Bits())
		} else {
			used = total
		}
	}
	return max(total-used, 0)
}

// overrideFile is the compose override giving each network its subnet.
func overrideFile(networks []string, subnets []netip.Prefix) []byte {
	var b strings.Builder
	b.WriteString("# Written by the sandboxer provider: this sandbox's network addresses.\nnetworks:\n")
	for i, n := range networks {
		fmt.Fprintf(&b, "  %s:\n    ipam:\n      config:\n        - subnet: %s\n", strconv.Quote(n), subnets[i])
	}
	return []byte(b.String())
}

// errSubnetTaken is the reservation script's exit status when another
// provider process took one of the chosen subnets meanwhile.
const errSubnetTaken = 3

// reserveNetworks chooses subnets for a new sandbox's networks and writes
// its override file; false when the stack has no network to address.
func (e *Extension) reserveNetworks(ctx context.Context, h *hosts.Host, p *catalog.Profile, sb *backends.Sandbox, engine string, networks []string) (bool, error) {
	if len(networks) == 0 {
		return false, nil
	}
	bits, err := subnetBits(p)
	if err != nil {
		return false, err
	}
	pool := e.pool(h)
	pool.mu.Lock()
	defer pool.mu.Unlock()
	file := overrideFor(sb)
	lock := hosts.Quote(h.Path(".sandboxer", "networks.lock"))
	for attempt := 0; attempt < 5; attempt++ {
		out, err := hosts.Output(ctx, h, takenScript(h, engine))
		if err != nil {
			return false, fmt.Errorf("unable to list the subnets in use on host %q: %w", h.Host(), err)
		}
		subnets, err := choose(pool.prefix, bits, len(networks), parseTaken(string(out)))
		if err != nil {
			return false, err
		}
		want := make([]string, len(subnets))
		for i, s := range subnets {
			want[i] = s.String()
		}
		// Under the host's lock: check the chosen subnets are still free of
		// other reservations, then write this one.
		script := fmt.Sprintf(`set -e; mkdir -p -- %[1]s; exec 9>%[2]s; flock 9
for f in %[1]s/*.yml; do [ -f "$f" ] || continue
  for s in %[3]s; do if grep -qxF -- "        - subnet: $s" "$f"; then exit %[4]d; fi; done
done
t=%[5]s.tmp.$$; cat > "$t"; mv -f -- "$t" %[5]s
`, hosts.Quote(h.Path(".sandboxer", "networks")), lock, hosts.Command(want...), errSubnetTaken, hosts.Quote(file))
		err = h.Run(ctx, script, strings.NewReader(string(overrideFile(networks, subnets))), nil)
		if hosts.IsExitCode(err, errSubnetTaken) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("unable to reserve network addresses on host %q: %w", h.Host(), err)
		}
		return true, nil
	}
	return false, fmt.Errorf("unable to reserve network addresses on host %q: other creates kept taking the free subnets", h.Host())
}

var _ backends.NetworkAddresser = (*Extension)(nil)

// FreeNetworks reports how many more /27 sandbox networks fit in h's pool.
func (e *Extension) FreeNetworks(ctx context.Context, h *hosts.Host) (int, error) {
	compose, err := e.compose(ctx, h)
	if err != nil {
		return 0, err
	}
	out, err := hosts.Output(ctx, h, takenScript(h, engine(compose)))
	if err != nil {
		return 0, fmt.Errorf("unable to list the subnets in use: %w", err)
	}
	return FreeNetworks(e.pool(h).prefix, parseTaken(string(out))), nil
}
