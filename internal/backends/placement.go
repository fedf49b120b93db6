package backends

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// Host pools: a sandbox that names a pool instead of a host is placed on
// the pool's host with the most headroom, read live. Capacity is read once
// per host and provider process (ReadCapacity), and the provider accounts
// for what that process has already placed, so the sandboxes of one run
// spread instead of all going to the host that was emptiest before it.
// Place is the decision alone: a pure function of what was read.

// Capacity is what one read-only command tells about a host.
type Capacity struct {
	Sandboxes      int     // records in the host's root directory
	MemTotalKiB    int64   // /proc/meminfo MemTotal
	MemAvailKiB    int64   // /proc/meminfo MemAvailable
	Load1          float64 // 1-minute load average
	CPUs           int
	DiskFreeKiB    int64 // free space of the file system holding the root directory
	DiskTotalKiB   int64
	ReadFromRootOf string // the directory df looked at (the root, or its nearest existing parent)
}

// ReadCapacity reads h's capacity in one command that changes nothing.
func ReadCapacity(ctx context.Context, h *hosts.Host) (Capacity, error) {
	script := fmt.Sprintf(`root=%s; n=0
for f in "$root"/.sandboxer/sandboxes/*.json; do [ -f "$f" ] && n=$((n+1)); done
echo "sandboxes $n"
awk '$1 == "MemTotal:" {print "memtotal", $2} $1 == "MemAvailable:" {print "memavail", $2}' /proc/meminfo
read l1 rest </proc/loadavg; echo "load $l1"
echo "cpus $(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc)"
d=$root; while [ ! -d "$d" ]; do d=$(dirname -- "$d"); done
echo "dir $d"
df -Pk -- "$d" | awk 'NR == 2 {print "disk", $4, $2}'
`, hosts.Quote(h.RootDir))
	out, err := hosts.Output(ctx, h, script)
	if err != nil {
		return Capacity{}, fmt.Errorf("unable to read the capacity of host %q: %w", h.Host(), err)
	}
	return parseCapacity(string(out))
}

// parseCapacity reads ReadCapacity's output.
func parseCapacity(out string) (Capacity, error) {
	var c Capacity
	seen := map[string]bool{}
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		var err error
		switch f[0] {
		case "sandboxes":
			c.Sandboxes, err = strconv.Atoi(f[1])
		case "memtotal":
			c.MemTotalKiB, err = strconv.ParseInt(f[1], 10, 64)
		case "memavail":
			c.MemAvailKiB, err = strconv.ParseInt(f[1], 10, 64)
		case "load":
			c.Load1, err = strconv.ParseFloat(f[1], 64)
		case "cpus":
			c.CPUs, err = strconv.Atoi(f[1])
		case "dir":
			c.ReadFromRootOf = strings.TrimSpace(strings.TrimPrefix(line, "dir "))
		case "disk":
			if len(f) != 3 {
				return c, fmt.Errorf("unreadable disk line %q", strings.TrimSpace(line))
			}
			c.DiskFreeKiB, err = strconv.ParseInt(f[1], 10, 64)
			if err == nil {
				c.DiskTotalKiB, err = strconv.ParseInt(f[2], 10, 64)
			}
		default:
			continue
		}
		if err != nil {
			return c, fmt.Errorf("unreadable capacity line %q: %w", strings.TrimSpace(line), err)
		}
		seen[f[0]] = true
	}
	for _, k := range []string{"sandboxes", "memtotal", "memavail", "load", "cpus", "disk"} {
		if !seen[k] {
			return c, fmt.Errorf("the host did not report %s", k)
		}
	}
	return c, nil
}

// Candidate is a host of a pool as placement sees it.
type Candidate struct {
	Host         string
	Labels       map[string]string
	MaxSandboxes int // 0: no limit
	Capacity     Capacity
	Err          error // the capacity read failed: the host is skipped
	Placed       int   // sandboxes this provider process has already placed there
}

// PoolRule is what a placement asks of a pool's hosts.
type PoolRule struct {
	Pool            string
	MinFreeMemoryMB int64             // the pool's floor: hosts with less available are full
	Labels          map[string]string // every one must be on the host, with that value
}

// Skip says why a host could not be chosen (not merely one with less
// headroom).
type Skip struct {
	Host   string
	Reason string
}

// Placement is Place's choice.
type Placement struct {
	Host     string
	Headroom float64
	Skipped  []Skip
}

// FullPoolError is a pool with no host that can take another sandbox.
type FullPoolError struct {
	Pool    string
	Skipped []Skip
}

func (e *FullPoolError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "pool %q has no host that can take another sandbox:", e.Pool)
	for _, s := range e.Skipped {
		fmt.Fprintf(&b, "\n  %s: %s", s.Host, s.Reason)
	}
	return b.String()
}

// Place picks the candidate with the most headroom that rule allows:
// reachable, carrying rule's labels, below its max_sandboxes (counting what
// was placed on it already) and above the pool's free-memory floor.
// Headroom is the sum of four fractions, each from 0 (nothing left) to 1:
// free sandbox slots (1/(1+n) without a maximum), available memory, CPU
// (1 - load per CPU, at least 0) and free disk. Ties go to the first host
// by name. No host left is a *FullPoolError naming each host's count.
func Place(cands []Candidate, rule PoolRule) (Placement, error) {
	cands = slices.Clone(cands)
	slices.SortFunc(cands, func(a, b Candidate) int { return strings.Compare(a.Host, b.Host) })
	var p Placement
	best := -1.0
	for _, c := range cands {
		n := c.Capacity.Sandboxes + c.Placed
		skip := func(reason string) { p.Skipped = append(p.Skipped, Skip{Host: c.Host, Reason: reason}) }
		if c.Err != nil {
			skip(fmt.Sprintf("unreachable (%v)", c.Err))
			continue
		}
		if missing := missingLabels(c.Labels, rule.Labels); missing != "" {
			skip(fmt.Sprintf("%d sandboxes; labels do not match (%s)", n, missing))
			continue
		}
		if c.MaxSandboxes > 0 && n >= c.MaxSandboxes {
			skip(fmt.Sprintf("full: %d of %d sandboxes", n, c.MaxSandboxes))
			continue
		}
		availMB := c.Capacity.MemAvailKiB / 1024
		if rule.MinFreeMemoryMB > 0 && availMB < rule.MinFreeMemoryMB {
			skip(fmt.Sprintf("%d sandboxes; %d MB of memory available, below the pool's floor of %d MB", n, availMB, rule.MinFreeMemoryMB))
			continue
		}
		if h := headroom(c, n); h > best {
			best, p.Host, p.Headroom = h, c.Host, h
		}
	}
	if p.Host == "" {
		return Placement{}, &FullPoolError{Pool: rule.Pool, Skipped: p.Skipped}
	}
	return p, nil
}

// headroom is c's headroom with n sandboxes on it (see Place).
func headroom(c Candidate, n int) float64 {
	slots := 1 / float64(1+n)
	if c.MaxSandboxes > 0 {
		slots = float64(c.MaxSandboxes-n) / float64(c.MaxSandboxes)
	}
	frac := func(part, whole float64) float64 {
		if whole <= 0 {
			return 0
		}
		return min(max(part/whole, 0), 1)
	}
	cpu := 0.0
	if c.Capacity.CPUs > 0 {
		cpu = max(0, 1-c.Capacity.Load1/float64(c.Capacity.CPUs))
	}
	return slots + frac(float64(c.Capacity.MemAvailKiB), float64(c.Capacity.MemTotalKiB)) + cpu +
		frac(float64(c.Capacity.DiskFreeKiB), float64(c.Capacity.DiskTotalKiB))
}

// missingLabels lists the labels of want that have is not carrying, "" if none.
func missingLabels(have, want map[string]string) string {
	var missing []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if v, ok := have[k]; !ok || v != want[k] {
			missing = append(missing, k+"="+want[k])
		}
	}
	return strings.Join(missing, ", ")
}
