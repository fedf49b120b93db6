package composefile

import (
	"bytes"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"
	"go.yaml.in/yaml/v3"
)

// Isolation: a compose file as people write it names its containers
// (`container_name`), publishes fixed host ports and gives networks and
// volumes fixed names. All of these are global on a host, so a second copy
// of the stack collides with the first. Isolate renders the file so that
// copies never collide, for compose v2 and v1 alike.
//
// Why a rendered file and not an override: compose merges `ports` of an
// override with the file's (v1 and v2 alike), so an override can add a
// port but never drop a fixed one; only compose v2 (>= 2.24) knows the
// `!override` tag that would. And why the file as written, edited node by
// node, rather than compose-go's marshalled project: the host's compose
// (v1 1.29 among them) reads it exactly as it would read the original:
// interpolation, relative paths, `~`, extends and anchors stay as written;
// a marshalled project carries keys compose v1's schema refuses
// (`depends_on.required`, `bind.create_host_path`) and paths of this machine.

// IsolateOptions says how a stack is rendered to run beside its copies.
type IsolateOptions struct {
	// Project is the sandbox's compose project (sbx-<id>): container and
	// fixed network and volume names are prefixed with it.
	Project string
	// FreePorts: each published port gets a free host port (the container
	// port and protocol are kept, and a host address the file binds it
	// to). False keeps the file's host ports (published_ports = "as_written").
	FreePorts bool
	// PublishAddress binds published ports the file binds to no address
	// (empty: all interfaces, as compose does). Only with FreePorts.
	PublishAddress string
	// Rules: a service that sets no limit of its own gets the host's
	// (under deploy.resources.limits with DeployLimits, for a swarm
	// stack); under the restricted policy, one that says nothing of them
	// drops every capability and gains no new privileges.
	Rules        Rules
	DeployLimits bool
}

// ScopedName is what a fixed container name becomes in a sandbox of
// compose project project.
func ScopedName(project, name string) string { return project + "-" + name }

// ScopedResourceName is what a network or volume with a fixed name becomes
// in a sandbox of project: compose's own name for it, <project>_<key>, so
// that everything naming it the compose way (a restore filling a new
// sandbox's volumes) finds it.
func ScopedResourceName(project, key string) string { return project + "_" + key }

// FromInclude reports whether a service comes from an `include`d file:
// it is not in the compose file itself, so Isolate cannot rewrite it.
func (l *Loaded) FromInclude(service string) bool {
	return l.lines.node("services", service) == nil
}

// ResourceFromInclude reports whether a network or volume ("networks",
// "volumes") is declared only in an `include`d file.
func (l *Loaded) ResourceFromInclude(kind, key string) bool {
	return l.lines.node(kind, key) == nil
}

// PortsFromExtends reports whether a service extends another: compose
// concatenates the ports of both, so rendering cannot drop the extended
// service's host ports, and the service's ports are kept as written.
func (l *Loaded) PortsFromExtends(service string) bool {
	return l.lines.node("services", service, "extends") != nil
}

// FixedName reports whether a network or volume ("networks", "volumes")
// of the project has a name of its own, not compose's <project>_<key>
// (set in the file, through a merge key or an alias, or in an include).
// External ones are not the project's and are never renamed.
func (l *Loaded) FixedName(kind, key string) bool {
	p := l.Project
	if kind == "networks" {
		n, ok := p.Networks[key]
		return ok && !bool(n.External) && n.Name != "" && n.Name != ScopedResourceName(p.Name, key)
	}
	v, ok := p.Volumes[key]
	return ok && !bool(v.External) && v.Name != "" && v.Name != ScopedResourceName(p.Name, key)
}

// MultiDocument reports whether the file holds more than one YAML
// document, which the rendering does not carry over.
func (l *Loaded) MultiDocument() bool {
	dec := yaml.NewDecoder(bytes.NewReader(l.raw))
	n := 0
	for {
		var doc yaml.Node
		if dec.Decode(&doc) != nil {
			return n > 1
		}
		n++
	}
}

// Isolate renders the compose file for a sandbox of opts.Project:
//   - `container_name: X` becomes ScopedName(project, X), and X stays an
//     alias on each of the service's networks the project creates, so
//     services that address each other by container name still reach
//     each other; `container:X` references follow the new name;
//   - with FreePorts, published ports lose their host port (the engine
//     picks a free one), keep their container port, protocol and host
//     address, or get PublishAddress;
//   - networks and volumes with a fixed name (not external) lose it, so
//     compose gives them its own, ScopedResourceName(project, key).
//
// YAML aliases are expanded first (and anchors dropped): an edit of a
// node that other nodes alias must not change them, nor leave an alias
// without its anchor. Everything else is the file as written. Services
// and resources from an `include` and ports of a service that `extends`
// another are left alone (the plan says so, or refuses).
func (l *Loaded) Isolate(opts IsolateOptions) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(l.raw, &doc); err != nil || len(doc.Content) == 0 {
		return nil, fmt.Errorf("compose file %s: not a YAML mapping", l.Path)
	}
	root := expandAliases(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("compose file %s: not a YAML mapping", l.Path)
	}
	doc.Content[0] = root
	p := l.Project
	renamed := map[string]string{} // container name -> scoped
	for _, svc := range p.Services {
		if svc.ContainerName != "" && !l.FromInclude(svc.Name) {
			renamed[svc.ContainerName] = ScopedName(opts.Project, svc.ContainerName)
		}
	}
	if services := mapValue(root, "services"); services != nil && services.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(services.Content); i += 2 {
			name, node := services.Content[i].Value, services.Content[i+1]
			svc, ok := p.Services[name]
			if !ok || node.Kind != yaml.MappingNode {
				continue // disabled by a compose profile
			}
			if svc.ContainerName != "" {
				setScalar(node, "container_name", escape(renamed[svc.ContainerName]))
				if svc.NetworkMode == "" {
					addAliases(node, svc, p)
				}
			}
			for _, key := range []string{"network_mode", "pid", "ipc"} {
				if v := mapValue(node, key); v != nil && v.Kind == yaml.ScalarNode {
					if to, ok := renamed[strings.TrimPrefix(v.Value, "container:")]; ok && strings.HasPrefix(v.Value, "container:") {
						setScalar(node, key, escape("container:"+to))
					}
				}
			}
			if vf := mapValue(node, "volumes_from"); vf != nil && vf.Kind == yaml.SequenceNode {
				for _, e := range vf.Content {
					c, mode, _ := strings.Cut(strings.TrimPrefix(e.Value, "container:"), ":")
					if to, ok := renamed[c]; ok && strings.HasPrefix(e.Value, "container:") {
						e.Value, e.Style = escape("container:"+to+strings.TrimSuffix(":"+mode, ":")), yaml.DoubleQuotedStyle
					}
				}
			}
			if opts.FreePorts && len(svc.Ports) > 0 && !l.PortsFromExtends(name) {
				setMapValue(node, "ports", freePorts(svc.Ports, opts.PublishAddress))
			}
			renderLimits(node, svc, opts.Rules, opts.DeployLimits, formatAtLeast39(root))
			if opts.Rules.Policy.Level.AtLeast(Restricted) {
				harden(node, svc)
			}
		}
	}
	for _, kind := range []string{"networks", "volumes"} {
		section := mapValue(root, kind)
		if section == nil || section.Kind != yaml.MappingNode {
			continue
		}
		for i := 0; i+1 < len(section.Content); i += 2 {
			key, node := section.Content[i].Value, section.Content[i+1]
			if !l.FixedName(kind, key) {
				continue
			}
			// No name at all rather than compose's own written out: compose
			// v1 labels a volume created under a written name with that name
			// (com.docker.compose.volume), where a checkpoint looks for the key.
			dropKey(node, "name")
		}
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return nil, fmt.Errorf("compose file %s: rendering it: %w", l.Path, err)
	}
	return out, nil
}

// dropKey removes key from mapping m and from the mappings its merge keys
// (`<<`, aliases already expanded) bring.
func dropKey(m *yaml.Node, key string) {
	if m == nil || m.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(m.Content); {
		switch k, v := m.Content[i].Value, m.Content[i+1]; {
		case k == key:
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			continue
		case k == "<<" && v.Kind == yaml.SequenceNode:
			for _, c := range v.Content {
				dropKey(c, key)
			}
		case k == "<<":
			dropKey(v, key)
		}
		i += 2
	}
}

// expandAliases returns n with every alias replaced by a copy of what it
// names (itself expanded) and no anchors left.
func expandAliases(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.AliasNode {
		return expandAliases(n.Alias)
	}
	c := *n
	c.Anchor = ""
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, child := range n.Content {
		c.Content[i] = expandAliases(child)
	}
	return &c
}

// freePorts is the service's published ports without host ports, in the
// short syntax both compose versions read: "[ADDR::]TARGET[/PROTO]".
func freePorts(ports []types.ServicePortConfig, publishAddress string) *yaml.Node {
	seq := &yaml.Node{Kind: yaml.SequenceNode}
	for _, port := range ports {
		s := strconv.FormatUint(uint64(port.Target), 10)
		if port.Protocol != "" && port.Protocol != "tcp" {
			s += "/" + port.Protocol
		}
		addr := port.HostIP
		if addr == "" {
			addr = publishAddress
		}
		if addr != "" {
			if a, err := netip.ParseAddr(addr); err == nil && a.Is6() {
				addr = "[" + addr + "]"
			}
			s = addr + "::" + s
		}
		seq.Content = append(seq.Content, quoted(s))
	}
	return seq
}

// addAliases makes the service's original container name an alias on each
// of its networks that the project creates (an external network is shared
// with other sandboxes, which must not answer to the same name), keeping
// whatever else the file says of each network.
func addAliases(node *yaml.Node, svc types.ServiceConfig, p *types.Project) {
	own := func(net string) bool { n, ok := p.Networks[net]; return !ok || !bool(n.External) }
	withAlias := func(entry *yaml.Node) *yaml.Node {
		if entry == nil || entry.Kind != yaml.MappingNode {
			entry = &yaml.Node{Kind: yaml.MappingNode}
		}
		aliases := mapValue(entry, "aliases")
		if aliases == nil || aliases.Kind != yaml.SequenceNode {
			aliases = &yaml.Node{Kind: yaml.SequenceNode}
			setMapValue(entry, "aliases", aliases)
		}
		aliases.Content = append(aliases.Content, quoted(escape(svc.ContainerName)))
		return entry
	}
	nets := mapValue(node, "networks")
	switch {
	case nets != nil && nets.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(nets.Content); i += 2 {
			if own(nets.Content[i].Value) {
				nets.Content[i+1] = withAlias(nets.Content[i+1])
			}
		}
		return
	case nets != nil && nets.Kind == yaml.SequenceNode:
		m := &yaml.Node{Kind: yaml.MappingNode}
		for _, n := range nets.Content {
			entry := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
			if own(n.Value) {
				entry = withAlias(nil)
			}
			m.Content = append(m.Content, quoted(n.Value), entry)
		}
		setMapValue(node, "networks", m)
		return
	}
	// No networks of its own in the file (the default network, or ones a
	// merge key brings): as the project resolved them.
	m := &yaml.Node{Kind: yaml.MappingNode}
	for _, name := range slices.Sorted(maps.Keys(svc.Networks)) {
		cfg := svc.Networks[name]
		entry := &yaml.Node{Kind: yaml.MappingNode}
		if cfg != nil {
			aliases := &yaml.Node{Kind: yaml.SequenceNode}
			for _, a := range cfg.Aliases {
				aliases.Content = append(aliases.Content, quoted(escape(a)))
			}
			if len(aliases.Content) > 0 {
				setMapValue(entry, "aliases", aliases)
			}
			if cfg.Ipv4Address != "" {
				setScalar(entry, "ipv4_address", cfg.Ipv4Address)
			}
			if cfg.Ipv6Address != "" {
				setScalar(entry, "ipv6_address", cfg.Ipv6Address)
			}
			if cfg.Priority != 0 {
				setMapValue(entry, "priority", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(cfg.Priority)})
			}
		}
		if own(name) {
			entry = withAlias(entry)
		}
		m.Content = append(m.Content, quoted(name), entry)
	}
	setMapValue(node, "networks", m)
}

// escape keeps compose from interpolating a resolved value again.
func escape(s string) string { return strings.ReplaceAll(s, "$", "$$") }

func quoted(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Value: s, Style: yaml.DoubleQuotedStyle}
}

func setScalar(m *yaml.Node, key, value string) { setMapValue(m, key, quoted(value)) }

// setMapValue replaces key's value in mapping m, or adds the key: an
// explicit key also wins over one a YAML merge key (`<<: *anchor`) brings.
func setMapValue(m *yaml.Node, key string, value *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = value
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, value)
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// WrittenSource is a bind mount's source as the file writes it when that
// starts with `~`, else resolved. The loader expands `~` to this machine's
// home, but compose on the host expands it to the host user's: a plan must
// name the path the host will use.
func (l *Loaded) WrittenSource(service, resolved string) string {
	vols := l.lines.node("services", service, "volumes")
	if vols == nil || vols.Kind != yaml.SequenceNode {
		return resolved
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return resolved
	}
	for _, v := range vols.Content {
		src := ""
		switch v.Kind {
		case yaml.ScalarNode:
			src, _, _ = strings.Cut(v.Value, ":")
		case yaml.MappingNode:
			if n := mapValue(v, "source"); n != nil {
				src = n.Value
			}
		}
		if strings.HasPrefix(src, "~") && filepath.Join(home, strings.TrimPrefix(src, "~")) == filepath.Clean(resolved) {
			return src
		}
	}
	return resolved
}
