package composessh

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

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
// until its teardown, across provider processes. Choosing is optimistic and
// costs no round trip of its own: what is taken (those files and every
// docker network's subnets) is listed once per host and provider process,
// plus what this process chose since; the file is written under the host's
// lock, after checking again, by the same command that runs `compose up`.
// A collision with another provider process (a file of this root naming a
// chosen subnet, or docker refusing an overlap with a network of another
// root) lists again and picks again.

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

// poolOf is h's network pool.
func (e *Extension) poolOf(h *hosts.Host) netip.Prefix {
	return cmp.Or(e.NetworkPools[h.Host()], DefaultNetworkPool)
}

// hostTaken is the subnets in use on h, as listed once per process and
// shared by the creates that ask meanwhile; fresh lists them again.
func (e *Extension) hostTaken(ctx context.Context, h *hosts.Host, engine string, fresh bool) ([]netip.Prefix, error) {
	if fresh {
		e.listings.Invalidate(ctx, func(host string) bool { return host == h.Host() })
	}
	return e.listings.Do(ctx, h.Host(), func(ctx context.Context) ([]netip.Prefix, error) {
		out, err := hosts.Output(ctx, h, takenScript(h, engine))
		if err != nil {
			return nil, fmt.Errorf("unable to list the subnets in use on host %q: %w", h.Host(), err)
		}
		return parseTaken(string(out)), nil
	})
}

// prefetch starts listing the subnets in use on h unless this process has
// them or is at it: the listing needs nothing a create makes, so it runs
// while the workspace is made and filled, for chooseNetworks to join (or
// to make again, when it failed).
func (e *Extension) prefetch(ctx context.Context, h *hosts.Host, engine string) {
	go func() { _, _ = e.hostTaken(ctx, h, engine, false) }()
}

// claim chooses n free subnets of the given size on h, taking besides those
// in use there every subnet this process chose there (a released one too:
// that only wastes a few addresses), so that concurrent creates never
// choose the same.
func (e *Extension) claim(h *hosts.Host, bits, n int, hostTaken []netip.Prefix) ([]netip.Prefix, error) {
	e.choosing.Lock()
	defer e.choosing.Unlock()
	subnets, err := choose(e.poolOf(h), bits, n, append(slices.Clip(hostTaken), e.chosen[h.Host()]...))
	if err == nil {
		e.chosen[h.Host()] = append(e.chosen[h.Host()], subnets...)
	}
	return subnets, err
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
// A network removed between the listing and the inspection (another
// sandbox's teardown) fails the inspection of all of them: the pair is
// tried again, and only a third failure in a row is the command's.
func takenScript(h *hosts.Host, engine string) string {
	return fmt.Sprintf(`cat -- %[1]s/*.yml 2>/dev/null | %[3]s
for try in 1 2 3; do
  ids=$(%[2]s network ls -q) || exit 1
  [ -z "$ids" ] && exit 0
  { err=$(%[2]s network inspect --format '{{range .IPAM.Config}}{{println .Subnet}}{{end}}' $ids 2>&1 1>&3) && exit 0; } 3>&1
done
printf '%%s\n' "$err" >&2; exit 1
`, hosts.Quote(h.Path(".sandboxer", "networks")), engine, subnetsIn)
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
		fmt.Fprintf(&b, "  %s:\n    ipam:\n      config:\n%s%s\n", strconv.Quote(n), subnetLine, subnets[i])
	}
	return []byte(b.String())
}

// The override's format, the one reader of reservations (both the listing
// of what is taken and script's check run it), and script's named result.
const (
	subnetLine        = "        - subnet: "                // starts an override's line naming a subnet
	subnetsIn         = "sed -n 's/^" + subnetLine + "//p'" // prints the subnets its input names
	reservedMeanwhile = "reserved-meanwhile"                // another process reserved a chosen subnet first
)

// reservation is the subnets chosen for a sandbox's networks, written on
// the host by the command that brings the stack up (script, then compose).
type reservation struct {
	dir, lock, file string
	override        []byte
}

// script writes the override file under the host's lock after checking
// that no other reservation of this root names a chosen subnet (else the
// command ends there, with reservedMeanwhile). The file's content (a few
// lines of YAML) is in the script itself: a command without input runs in
// one of the connection's shells rather than a session of its own.
func (r *reservation) script(m hosts.Mark) string {
	return fmt.Sprintf(`set -e; mkdir -p -- %[1]s; exec 9>%[2]s; flock 9; o=%[3]s
if cat -- %[1]s/*.yml 2>/dev/null | %[4]s | grep -qxF -- "$(printf '%%s' "$o" | %[4]s)"; then %[5]s; fi
t=%[6]s.tmp.$$; printf '%%s' "$o" > "$t"; mv -f -- "$t" %[6]s
exec 9>&-
`, r.dir, r.lock, hosts.Quote(string(r.override)), subnetsIn, m.Result(reservedMeanwhile), hosts.Quote(r.file))
}

// chooseNetworks picks subnets for a new sandbox's networks; nil when the
// stack has no network to address. relist makes it ask the host what is
// taken first (after a collision); otherwise the host is asked only by the
// first create of the process, or when the pool looks full.
func (e *Extension) chooseNetworks(ctx context.Context, h *hosts.Host, p *catalog.Profile, sb *backends.Sandbox, engine string, networks []string, relist bool) (*reservation, error) {
	if len(networks) == 0 {
		return nil, nil
	}
	bits, err := subnetBits(p)
	if err != nil {
		return nil, err
	}
	var subnets []netip.Prefix
	for fresh := relist; ; fresh = true {
		taken, err := e.hostTaken(ctx, h, engine, fresh)
		if err == nil {
			subnets, err = e.claim(h, bits, len(networks), taken)
		}
		if err == nil {
			break
		}
		if fresh {
			return nil, err
		}
		// The listing failed (a prefetch's), or the pool is full as this
		// process saw it (the host may have freed some since): ask again.
	}
	return &reservation{
		dir:      hosts.Quote(h.Path(".sandboxer", "networks")),
		lock:     hosts.Quote(h.Path(".sandboxer", "networks.lock")),
		file:     overrideFor(sb),
		override: overrideFile(networks, subnets),
	}, nil
}

var _ backends.NetworkAddresser = (*Extension)(nil)

// FreeNetworks reports how many more /27 sandbox networks fit in h's pool.
func (e *Extension) FreeNetworks(ctx context.Context, h *hosts.Host) (int, error) {
	compose, err := e.compose(ctx, h)
	if err != nil {
		return 0, err
	}
	taken, err := e.hostTaken(ctx, h, engine(compose), true)
	if err != nil {
		return 0, err
	}
	return FreeNetworks(e.poolOf(h), taken), nil
}
