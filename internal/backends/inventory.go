package backends

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// HostFacts is what a host says about itself, gathered in one command.
// Numbers a host cannot tell (no /proc, no docker) stay zero or empty.
type HostFacts struct {
	OS, Arch, Kernel              string
	CPUCount                      int
	MemoryTotal, MemoryAvailable  int64 // bytes
	DiskTotal, DiskFree           int64 // bytes, of the filesystem holding root_dir
	Load1, Load5, Load15          float64
	DockerVersion, ComposeVersion string
	StoreBytes                    int64
	StoreSnapshots                int
	// The TTL reaper of root_dir: its script is there, and a crontab line
	// runs it.
	ReaperInstalled, ReaperScheduled bool
	// SwarmNodes are the nodes of the swarm when the host is one of its
	// managers (ext.swarm's hosts); empty elsewhere.
	SwarmNodes []SwarmNode
}

// SwarmNode is one node of a swarm as its manager lists it.
type SwarmNode struct {
	Name         string // hostname
	State        string // ready, down, unknown, disconnected
	Availability string // active, pause, drain
	Manager      string // leader, reachable, unreachable; "" for a worker
}

// SandboxInfo is one sandbox found on a host.
type SandboxInfo struct {
	Sandbox *Sandbox
	Status  Status
	Expired bool
	// Stale: expired, half-dead (a workspace without its services, or
	// services without their workspace), or abandoned: never ready, and its
	// create deadline has passed.
	Stale bool
}

// factsScript prints key=value lines; root is quoted by the caller, and the
// crontab check comes from reaper.go.
const factsScript = `root=%[1]s
echo "uname=$(uname -s)|$(uname -m)|$(uname -r)"
echo "nproc=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null)"
if [ -r /proc/meminfo ]; then awk '/^MemTotal:/{print "memtotal="$2} /^MemAvailable:/{print "memavail="$2}' /proc/meminfo; fi
d=$root; while [ ! -d "$d" ]; do d=$(dirname -- "$d"); done
df -Pk -- "$d" | awk 'NR==2{print "disk="$2"|"$4}'
if [ -r /proc/loadavg ]; then echo "load=$(cut -d' ' -f1-3 /proc/loadavg)"; fi
echo "docker=$(docker version --format '{{.Server.Version}}' 2>/dev/null)"
echo "compose=$( (docker compose version --short 2>/dev/null || docker-compose version --short 2>/dev/null) | head -n 1)"
echo "store=$(du -sk -- "$root/.sandboxer/store" 2>/dev/null | cut -f1)|$(ls -- "$root/.sandboxer/store/snapshots" 2>/dev/null | grep -c '\.json$')"
if [ -f "$root/.sandboxer/bin/reaper.sh" ]; then echo "reaper_installed=1"; fi
docker node ls --format 'swarm_node={{.Hostname}}|{{.Status}}|{{.Availability}}|{{.ManagerStatus}}' 2>/dev/null
if abs=$(cd -- "$root" 2>/dev/null && pwd -P); then
	%[2]s
fi
`

// Facts gathers a host's facts.
func (r *Registry) Facts(ctx context.Context, h *hosts.Host) (HostFacts, error) {
	out, err := hosts.Output(ctx, h, fmt.Sprintf(factsScript, hosts.Quote(h.RootDir), reaperScheduledCheck()))
	if err != nil {
		return HostFacts{}, err
	}
	return parseFacts(string(out)), nil
}

func parseFacts(out string) HostFacts {
	var f HostFacts
	num := func(s string) int64 { n, _ := strconv.ParseInt(strings.TrimSpace(s), 10, 64); return n }
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		parts := strings.Split(v, "|")
		switch k {
		case "uname":
			if len(parts) == 3 {
				f.OS, f.Arch, f.Kernel = strings.ToLower(parts[0]), parts[1], parts[2]
			}
		case "nproc":
			f.CPUCount = int(num(v))
		case "memtotal":
			f.MemoryTotal = num(v) * 1024
		case "memavail":
			f.MemoryAvailable = num(v) * 1024
		case "disk":
			if len(parts) == 2 {
				f.DiskTotal, f.DiskFree = num(parts[0])*1024, num(parts[1])*1024
			}
		case "load":
			l := strings.Fields(v)
			if len(l) == 3 {
				f.Load1, _ = strconv.ParseFloat(l[0], 64)
				f.Load5, _ = strconv.ParseFloat(l[1], 64)
				f.Load15, _ = strconv.ParseFloat(l[2], 64)
			}
		case "docker":
			f.DockerVersion = strings.TrimSpace(v)
		case "compose":
			f.ComposeVersion = strings.TrimPrefix(strings.TrimSpace(v), "v")
		case "reaper_installed":
			f.ReaperInstalled = v == "1"
		case "reaper_scheduled":
			f.ReaperScheduled = v == "1"
		case "swarm_node":
			if len(parts) == 4 {
				f.SwarmNodes = append(f.SwarmNodes, SwarmNode{Name: parts[0], State: strings.ToLower(parts[1]),
					Availability: strings.ToLower(parts[2]), Manager: strings.ToLower(parts[3])})
			}
		case "store":
			if len(parts) == 2 {
				f.StoreBytes, f.StoreSnapshots = num(parts[0])*1024, int(num(parts[1]))
			}
		}
	}
	return f
}

// Sandboxes lists every sandbox recorded on a host with its live status,
// sorted by id: one command for the whole host (its host view, shared with
// the refreshes in flight), not one per sandbox.
func (r *Registry) Sandboxes(ctx context.Context, h *hosts.Host) ([]SandboxInfo, error) {
	view, err := r.view(ctx, h)
	if err != nil {
		return nil, err
	}
	now := r.now()
	var list []SandboxInfo
	for _, id := range slices.Sorted(maps.Keys(view.records)) {
		sb, err := decodeRecord(h, id, view.records[id], view.root)
		if err != nil {
			return nil, err
		}
		info := SandboxInfo{Sandbox: sb, Expired: sb.ExpiresAt != nil && now.After(*sb.ExpiresAt)}
		ext, err := r.Extension(sb.Extension)
		if err != nil {
			info.Status = Status{State: "unknown"}
		} else if info.Status, err = r.statusIn(ctx, h, view, ext, sb); err != nil {
			return nil, err
		}
		// At whole seconds, as the reaper compares it: stale here means
		// the reaper removes it when it runs.
		abandoned := sb.ReadyAt == nil && sb.CreateDeadline != nil && now.Truncate(time.Second).After(*sb.CreateDeadline)
		info.Stale = info.Expired || abandoned || info.Status.State == StatusMissing ||
			(info.Status.State == StatusStopped && !sb.Stopped())
		list = append(list, info)
	}
	return list, nil
}

// CanaryResult is one canary run.
type CanaryResult struct {
	OK      bool
	ReadyMs int64 // create → ready
	Total   time.Duration
	Err     error
}

// Canary deploys the canary profile on h, times create → ready, and tears
// it down. Whatever happens, nothing of the canary remains: a failed create
// cleans up after itself, and the teardown's own failure is the result.
func (r *Registry) Canary(ctx context.Context, h *hosts.Host, p *catalog.Profile) CanaryResult {
	start := r.now()
	sb, err := r.Create(ctx, Request{ID: NewID(), Profile: p, Host: h, Labels: map[string]string{"purpose": "canary"}})
	if err != nil {
		return CanaryResult{Err: err, Total: r.now().Sub(start)}
	}
	res := CanaryResult{OK: true, ReadyMs: sb.ReadyAt.Sub(start).Milliseconds()}
	dctx, cancel := detached(ctx)
	defer cancel()
	if err := r.Destroy(dctx, h, sb.ID); err != nil {
		res.OK, res.Err = false, fmt.Errorf("the canary became ready but its teardown failed: %w", err)
	}
	res.Total = r.now().Sub(start)
	return res
}

// NetworkAddresser is an Extension that gives its sandboxes' networks
// addresses from a per-host pool.
type NetworkAddresser interface {
	FreeNetworks(ctx context.Context, h *hosts.Host) (int, error)
}

// FreeNetworks is how many more sandbox networks fit on h (0 when no
// extension addresses networks). It only reads.
func (r *Registry) FreeNetworks(ctx context.Context, h *hosts.Host) (int, error) {
	for _, name := range slices.Sorted(maps.Keys(r.exts)) {
		if na, ok := r.exts[name].(NetworkAddresser); ok {
			return na.FreeNetworks(ctx, h)
		}
	}
	return 0, nil
}
