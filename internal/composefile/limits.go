package composefile

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"
	units "github.com/docker/go-units"
	"go.yaml.in/yaml/v3"
)

// Limits are what one container may use: memory in bytes, CPUs, processes.
// Zero is no limit.
type Limits struct {
	Memory int64   `json:"memory,omitempty"`
	CPUs   float64 `json:"cpus,omitempty"`
	Pids   int64   `json:"pids,omitempty"`
}

// ParseMemory reads a size as compose writes one ("512m", "2g", bytes).
func ParseMemory(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := units.RAMInBytes(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a size such as 512m or 2g", s)
	}
	return n, nil
}

// Rules are what a host allows the sandboxes on it: the policy, and the
// limits given to services that set none (Default) and that no service may
// exceed (Max).
type Rules struct {
	Policy  Policy `json:"policy"`
	Default Limits `json:"default_limits,omitzero"`
	Max     Limits `json:"max_limits,omitzero"`
}

// own is what a service sets itself, in its own keys or under deploy.
func own(svc types.ServiceConfig) Limits {
	l := Limits{Memory: int64(svc.MemLimit), CPUs: float64(svc.CPUS), Pids: svc.PidsLimit}
	if d := svc.Deploy; d != nil && d.Resources.Limits != nil {
		r := d.Resources.Limits
		if l.Memory == 0 {
			l.Memory = int64(r.MemoryBytes)
		}
		if l.CPUs == 0 {
			l.CPUs = float64(r.NanoCPUs)
		}
		if l.Pids == 0 {
			l.Pids = r.Pids
		}
	}
	// compose-go holds cpus as float32 (0.1 reads 0.10000000149): as
	// written. A negative limit (pids_limit: -1) is none.
	l.CPUs = math.Round(l.CPUs*1e6) / 1e6
	l.Memory, l.Pids = max(l.Memory, 0), max(l.Pids, 0)
	return l
}

// orElse is l with each unset limit taken from d.
func (l Limits) orElse(d Limits) Limits {
	if l.Memory == 0 {
		l.Memory = d.Memory
	}
	if l.CPUs == 0 {
		l.CPUs = d.CPUs
	}
	if l.Pids == 0 {
		l.Pids = d.Pids
	}
	return l
}

// Add sums limits (a sandbox's, a host's); unlimited stays unlimited only
// where every term is.
func (l Limits) Add(o Limits) Limits {
	return Limits{Memory: l.Memory + o.Memory, CPUs: l.CPUs + o.CPUs, Pids: l.Pids + o.Pids}
}

// added is what rendering adds to a service: the defaults (else the
// maximums) where it sets nothing of its own.
func (r Rules) added(svc types.ServiceConfig) Limits {
	o, d := own(svc), r.Default.orElse(r.Max)
	var a Limits
	if o.Memory == 0 {
		a.Memory = d.Memory
	}
	if o.CPUs == 0 {
		a.CPUs = d.CPUs
	}
	if o.Pids == 0 {
		a.Pids = d.Pids
	}
	return a
}

// ServiceLimits are what each service of the project runs with under r:
// its own limits, else the host's.
func (l *Loaded) ServiceLimits(r Rules) map[string]Limits {
	out := map[string]Limits{}
	for name, svc := range l.Project.Services {
		out[name] = own(svc).orElse(r.added(svc))
	}
	return out
}

// CheckLimits returns, each its own error, every limit a service sets above
// the host's maximum, and every service limits cannot be given to (one from
// an included file, which the rendering does not reach).
func (l *Loaded) CheckLimits(r Rules) []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(l.Project.Services)) {
		svc := l.Project.Services[name]
		o, m := own(svc), r.Max
		at := []string{"services", name}
		if m.Memory > 0 && o.Memory > m.Memory {
			errs = append(errs, l.Errorf(at, "service %q: memory limit %s is above the host's max_limits.memory %s", name, units.BytesSize(float64(o.Memory)), units.BytesSize(float64(m.Memory))))
		}
		if m.CPUs > 0 && o.CPUs > m.CPUs {
			errs = append(errs, l.Errorf(at, "service %q: cpus %g is above the host's max_limits.cpus %g", name, o.CPUs, m.CPUs))
		}
		if m.Pids > 0 && o.Pids > m.Pids {
			errs = append(errs, l.Errorf(at, "service %q: pids limit %d is above the host's max_limits.pids %d", name, o.Pids, m.Pids))
		}
		if r.added(svc) != (Limits{}) && l.FromInclude(name) {
			errs = append(errs, l.Errorf([]string{"include"}, "service %q (from an included file) sets no limits of its own, and the host's "+
				"default_limits cannot be written into an included file; set mem_limit, cpus and pids_limit on it, or move it into the compose file", name))
		}
	}
	return errs
}

// renderLimits writes what r adds to a service's node: compose's own keys,
// which compose v1 and v2 both apply, or deploy.resources.limits for a
// swarm stack, whose deploy ignores them.
func renderLimits(node *yaml.Node, svc types.ServiceConfig, r Rules, underDeploy, pidsUnderDeploy bool) {
	a := r.added(svc)
	if a == (Limits{}) {
		return
	}
	if !underDeploy {
		if a.Memory > 0 {
			setMapValue(node, "mem_limit", plain(strconv.FormatInt(a.Memory, 10)))
		}
		if a.CPUs > 0 {
			setMapValue(node, "cpus", plain(strconv.FormatFloat(a.CPUs, 'f', -1, 64)))
		}
		if a.Pids > 0 {
			setMapValue(node, "pids_limit", plain(strconv.FormatInt(a.Pids, 10)))
		}
		return
	}
	// docker stack deploy's schema takes memory and cpus as strings, and
	// pids from format 3.9 on.
	deploy := child(node, "deploy")
	limits := child(child(deploy, "resources"), "limits")
	if a.Memory > 0 {
		setMapValue(limits, "memory", quoted(strconv.FormatInt(a.Memory, 10)))
	}
	if a.CPUs > 0 {
		setMapValue(limits, "cpus", quoted(strconv.FormatFloat(a.CPUs, 'f', -1, 64)))
	}
	if a.Pids > 0 && pidsUnderDeploy {
		setMapValue(limits, "pids", plain(strconv.FormatInt(a.Pids, 10)))
	}
}

// formatAtLeast39 reports whether a file's `version` (none: the newest)
// is compose file format 3.9 or later, whose deploy limits take pids.
func formatAtLeast39(root *yaml.Node) bool {
	v := mapValue(root, "version")
	if v == nil {
		return true
	}
	major, minor, _ := strings.Cut(strings.TrimSpace(v.Value), ".")
	ma, err1 := strconv.Atoi(major)
	mi, err2 := strconv.Atoi(cmp.Or(minor, "0"))
	return err1 != nil || err2 != nil || ma > 3 || ma == 3 && mi >= 9
}

func plain(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s} }

// child is the mapping under key in m, made when absent.
func child(m *yaml.Node, key string) *yaml.Node {
	if v := mapValue(m, key); v != nil && v.Kind == yaml.MappingNode {
		return v
	}
	v := &yaml.Node{Kind: yaml.MappingNode}
	setMapValue(m, key, v)
	return v
}

// Total is what the project's containers may use together under r: each
// service's limits times its replicas. A dimension any service leaves
// unlimited is unlimited (zero) in the total.
func (l *Loaded) Total(r Rules) Limits {
	var t Limits
	unlimited := Limits{}
	for name, svc := range l.Project.Services {
		n := 1
		if svc.Deploy != nil && svc.Deploy.Replicas != nil {
			n = *svc.Deploy.Replicas
		} else if svc.Scale != nil {
			n = *svc.Scale
		}
		s := l.ServiceLimits(r)[name]
		for range n {
			t = t.Add(s)
		}
		if s.Memory == 0 {
			unlimited.Memory = 1
		}
		if s.CPUs == 0 {
			unlimited.CPUs = 1
		}
		if s.Pids == 0 {
			unlimited.Pids = 1
		}
	}
	if unlimited.Memory != 0 {
		t.Memory = 0
	}
	if unlimited.CPUs != 0 {
		t.CPUs = 0
	}
	if unlimited.Pids != 0 {
		t.Pids = 0
	}
	return t
}
