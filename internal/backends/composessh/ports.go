package composessh

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
)

// parsePorts reads the published ports of a container as `docker ps`
// prints them ({{.Ports}}): "0.0.0.0:49153->80/tcp, :::49153->80/tcp,
// 5432/tcp", ranges as "0.0.0.0:8000-8001->8000-8001/tcp", newer engines'
// IPv6 as "[::]:49153->80/tcp". A port exposed but not published (no
// "->") is not reachable from outside and is left out.
func parsePorts(s string) []backends.Port {
	var out []backends.Port
	for entry := range strings.SplitSeq(strings.TrimSpace(s), ",") {
		host, container, ok := strings.Cut(strings.TrimSpace(entry), "->")
		if !ok {
			continue
		}
		target, proto, _ := strings.Cut(container, "/")
		if proto == "" {
			proto = "tcp"
		}
		i := strings.LastIndex(host, ":")
		if i < 0 {
			continue
		}
		ip := strings.Trim(host[:i], "[]")
		firstPub, lastPub, ok1 := portRange(host[i+1:])
		firstTarget, lastTarget, ok2 := portRange(target)
		if !ok1 || !ok2 || lastPub-firstPub != lastTarget-firstTarget {
			continue
		}
		for n := 0; n <= lastTarget-firstTarget; n++ {
			out = append(out, backends.Port{Target: firstTarget + n, Protocol: proto, HostIP: ip, Published: firstPub + n})
		}
	}
	return out
}

// portRange reads "80" or "8000-8001".
func portRange(s string) (first, last int, ok bool) {
	a, b, isRange := strings.Cut(s, "-")
	first, err := strconv.Atoi(a)
	if err != nil {
		return 0, 0, false
	}
	last = first
	if isRange {
		if last, err = strconv.Atoi(b); err != nil || last < first {
			return 0, 0, false
		}
	}
	return first, last, true
}

// tidyPorts sorts a service's ports (by target, protocol, address) and
// drops repeats: the same binding of several containers, and the IPv6
// twin ("::") of a port the engine also publishes on IPv4's "0.0.0.0",
// so that each container port has one endpoint.
func tidyPorts(ports []backends.Port) []backends.Port {
	if len(ports) == 0 {
		return nil
	}
	v4 := map[[2]any]bool{}
	for _, p := range ports {
		if p.HostIP == "0.0.0.0" {
			v4[[2]any{p.Target, p.Protocol}] = true
		}
	}
	out := ports[:0:0]
	for _, p := range ports {
		if p.HostIP == "::" && v4[[2]any{p.Target, p.Protocol}] {
			continue
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b backends.Port) int {
		return cmp.Or(cmp.Compare(a.Target, b.Target), cmp.Compare(a.Protocol, b.Protocol), cmp.Compare(a.HostIP, b.HostIP), cmp.Compare(a.Published, b.Published))
	})
	return out
}
