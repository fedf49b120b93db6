package composessh

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

var _ backends.Tunneler = (*Extension)(nil)

// serviceLabel is the label compose puts on a service's containers.
const serviceLabel = "com.docker.compose.service"

// ServiceAddress is the address of a running container of the service on
// the sandbox's own network: the host reaches it directly, so the service
// needs no published port. One command lists the service's containers and
// inspects them.
func (e *Extension) ServiceAddress(ctx context.Context, h *hosts.Host, sb *backends.Sandbox, service string, port int) (string, error) {
	compose, err := e.compose(ctx, h)
	if err != nil {
		return "", err
	}
	out, err := hosts.Output(ctx, h, serviceAddressScript(engine(compose), sb.ComposeProject, service))
	if err != nil {
		return "", fmt.Errorf("unable to inspect the containers of service %s of sandbox %s: %w", service, sb.ID, err)
	}
	ip, err := pickServiceIP(string(out), sb.ComposeProject)
	if err != nil {
		return "", fmt.Errorf("service %s of sandbox %s %w", service, sb.ID, err)
	}
	return net.JoinHostPort(ip, strconv.Itoa(port)), nil
}

// serviceAddressScript prints, for each container of the service, a line
// state|network mode|name=ipv4=ipv6 of each network, separated by spaces.
func serviceAddressScript(engine, project, service string) string {
	format := `{{.State.Status}}|{{.HostConfig.NetworkMode}}|{{range $n, $s := .NetworkSettings.Networks}}{{$n}}={{$s.IPAddress}}={{$s.GlobalIPv6Address}} {{end}}`
	// $ids unquoted: container ids are words, one per container.
	return fmt.Sprintf(`ids=$(%s ps -aq --filter %s --filter %s) || exit 1; [ -z "$ids" ] || exec %s inspect --format %s $ids`,
		engine, hosts.Quote("label="+projectLabel+"="+project), hosts.Quote("label="+serviceLabel+"="+service),
		engine, hosts.Quote(format))
}

// pickServiceIP reads serviceAddressScript's output: the address of the
// first running container, on a network of the project when it has one
// (compose names them <project>_<name>), else on any network it is on.
// Errors complete "service S of sandbox X ...".
func pickServiceIP(out, project string) (string, error) {
	var states []string
	for line := range strings.Lines(out) {
		parts := strings.SplitN(strings.TrimSpace(line), "|", 3)
		if len(parts) != 3 {
			continue
		}
		state, mode, nets := parts[0], parts[1], strings.Fields(parts[2])
		if state != "running" {
			states = append(states, state)
			continue
		}
		switch {
		case mode == "host":
			// It listens on the host's own interfaces.
			return "127.0.0.1", nil
		case mode == "none":
			return "", fmt.Errorf("has no network (network_mode: none): nothing can connect to it")
		case strings.HasPrefix(mode, "container:") || strings.HasPrefix(mode, "service:"):
			return "", fmt.Errorf("shares the network of another container (network_mode: %s): open the tunnel to that service instead", mode)
		}
		// Own networks first, then others (external ones); IPv4 before IPv6.
		slices.SortStableFunc(nets, func(a, b string) int {
			return boolOrder(!ownNetwork(a, project)) - boolOrder(!ownNetwork(b, project))
		})
		for _, family := range []int{1, 2} {
			for _, n := range nets {
				if f := strings.Split(n, "="); len(f) == 3 && f[family] != "" {
					return f[family], nil
				}
			}
		}
		return "", fmt.Errorf("has a running container with no IP address on any network (%s)", strings.Join(nets, " "))
	}
	if len(states) == 0 {
		return "", fmt.Errorf("has no container (removed outside Terraform): re-create the sandbox to bring it back")
	}
	return "", fmt.Errorf("is not running (its container is %s): start it to open a tunnel to it", strings.Join(states, ", "))
}

// ownNetwork reports whether a network (as "name=ipv4=ipv6") is one the
// project made: compose names it <project>_<key>, a fixed name is scoped as
// <project>-<name> (composefile.ScopedName).
func ownNetwork(n, project string) bool {
	return strings.HasPrefix(n, project+"_") || strings.HasPrefix(n, project+"-")
}

func boolOrder(b bool) int {
	if b {
		return 1
	}
	return 0
}

// silentPort is a published TCP port whose service does not accept a
// connection yet (wait_for_ports).
type silentPort struct {
	service string
	port    int
	err     error
	never   bool // no later try can succeed (the host's sshd refuses forwarding)
}

// portProbeTimeout bounds one connection attempt of wait_for_ports: a
// service that accepts does so at once; a slow answer is tried again.
const portProbeTimeout = 2 * time.Second

// silentPort connects to each published TCP port of st's services, from
// the host to the service's container (as a tunnel does): a published
// port itself is accepted by the engine's proxy whether or not the
// service listens, so only the container's own address says the service
// answers. nil when every port accepts.
func (e *Extension) silentPort(ctx context.Context, h *hosts.Host, sb *backends.Sandbox, st backends.Status) *silentPort {
	for _, s := range st.Services {
		for _, p := range s.Ports {
			if p.Protocol != "tcp" {
				continue
			}
			addr, err := e.ServiceAddress(ctx, h, sb, s.Name, p.Target)
			if err == nil {
				pctx, cancel := context.WithTimeout(ctx, portProbeTimeout)
				var conn net.Conn
				if conn, err = h.Dial(pctx, "tcp", addr); err == nil {
					_ = conn.Close()
				}
				cancel()
			}
			if err != nil {
				return &silentPort{service: s.Name, port: p.Target, err: err, never: errors.Is(err, hosts.ErrForwardingRefused)}
			}
		}
	}
	return nil
}
