package composefile

import (
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
}

// ScopedName is what a fixed name (container, network, volume) becomes
// in a sandbox of compose project project.
func ScopedName(project, name string) string { return project + "-" + name }

// FromInclude reports whether a service comes from an `include`d file:
// it is not in the compose file itself, so Isolate cannot rewrite it.
func (l *Loaded) FromInclude(service string) bool {
	return l.lines.node("services", service) == nil
}

// PortsFromExtends reports whether a service's ports come from `extends`
// without the service listing its own: compose concatenates the ports of
// both, so rendering cannot drop the extended service's host ports.
func (l *Loaded) PortsFromExtends(service string) bool {
	return l.lines.node("services", service, "extends") != nil && l.lines.node("services", service, "ports") == nil
}

// FixedName reports whether a network or volume ("networks", "volumes")
// sets `name:` in the file itself.
func (l *Loaded) FixedName(kind, key string) bool {
	return l.lines.node(kind, key, "name") != nil
}

// Isolate renders the compose file for a sandbox of opts.Project:
//   - `container_name: X` becomes ScopedName(project, X), and X stays an
//     alias on each of the service's networks, so services that address
//     each other by container name still reach each other;
//   - with FreePorts, published ports lose their host port (the engine
//     picks a free one), keep their container port, protocol and host
//     address, or get PublishAddress;
//   - networks and volumes with a fixed `name:` (not external) get
//     ScopedName(project, name).
//
// Everything else is the file as written. Services from an `include` are
// left alone (the plan refuses what they would break).
func (l *Loaded) Isolate(opts IsolateOptions) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(l.raw, &doc); err != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("compose file %s: not a YAML mapping", l.Path)
	}
	root := doc.Content[0]
	p := l.Project
	if services := mapValue(root, "services"); services != nil && services.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(services.Content); i += 2 {
			name, node := services.Content[i].Value, services.Content[i+1]
			svc, ok := p.Services[name]
			if !ok || node.Kind != yaml.MappingNode {
				continue // disabled by a compose profile
			}
			if svc.ContainerName != "" {
				setScalar(node, "container_name", escape(ScopedName(opts.Project, svc.ContainerName)))
				if svc.NetworkMode == "" {
					setNetworks(node, svc)
				}
			}
			if opts.FreePorts && len(svc.Ports) > 0 && !l.PortsFromExtends(name) {
				setMapValue(node, "ports", freePorts(svc.Ports, opts.PublishAddress))
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
			if node.Kind != yaml.MappingNode || mapValue(node, "name") == nil || isExternal(p, kind, key) {
				continue
			}
			// `compose config` (a restore's project) prints every name,
			// the project's own ones already scoped.
			name := resolvedName(p, kind, key)
			if !strings.HasPrefix(name, opts.Project) {
				setScalar(node, "name", escape(ScopedName(opts.Project, name)))
			}
		}
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return nil, fmt.Errorf("compose file %s: rendering it: %w", l.Path, err)
	}
	return out, nil
}

func isExternal(p *types.Project, kind, key string) bool {
	if kind == "networks" {
		return bool(p.Networks[key].External)
	}
	return bool(p.Volumes[key].External)
}

func resolvedName(p *types.Project, kind, key string) string {
	if kind == "networks" {
		return p.Networks[key].Name
	}
	return p.Volumes[key].Name
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
		seq.Content = append(seq.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: s, Style: yaml.DoubleQuotedStyle})
	}
	return seq
}

// setNetworks writes the service's networks as a mapping in which each
// network lists the original container name among its aliases (kept with
// the aliases and addresses the service already had there).
func setNetworks(node *yaml.Node, svc types.ServiceConfig) {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for _, name := range slices.Sorted(maps.Keys(svc.Networks)) {
		cfg := svc.Networks[name]
		entry := &yaml.Node{Kind: yaml.MappingNode}
		aliases := &yaml.Node{Kind: yaml.SequenceNode}
		if cfg != nil {
			for _, a := range cfg.Aliases {
				if a != svc.ContainerName {
					aliases.Content = append(aliases.Content, quoted(escape(a)))
				}
			}
		}
		aliases.Content = append(aliases.Content, quoted(escape(svc.ContainerName)))
		setMapValue(entry, "aliases", aliases)
		if cfg != nil {
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
