package backends

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// Tunnels reach a sandbox's service from the machine running Terraform
// without the service publishing a port: a listener on this machine
// relays each connection through the host's transport (an SSH
// direct-tcpip channel on the pooled connection, or a plain connect on
// a local host) to the service's own address on the sandbox's network.

// Tunneler is an Extension whose services its host can connect to.
type Tunneler interface {
	// ServiceAddress is the address ("172.18.0.3:5432") at which h
	// connects to port of sb's service, one of sb.Services. It fails,
	// saying so, when the service has no running container.
	ServiceAddress(ctx context.Context, h *hosts.Host, sb *Sandbox, service string, port int) (string, error)
}

// TunnelTarget is a service's port as the sandbox's host reaches it.
type TunnelTarget struct {
	Host    string // the host's name
	Address string // where the host connects to
	// Dial opens a connection from the host to Address.
	Dial func(ctx context.Context) (net.Conn, error)
}

// probeTimeout bounds the one connection a tunnel makes when it opens. A
// refused connection answers at once; one that does not answer at all
// means the host does not reach the address.
const probeTimeout = 20 * time.Second

// TunnelTarget finds where port of service of the sandbox on h is reached
// from h, and checks that something accepts connections there (one
// connection, closed at once), so that a tunnel that opens works.
func (r *Registry) TunnelTarget(ctx context.Context, h *hosts.Host, sandboxID, service string, port int) (*TunnelTarget, error) {
	if port < 1 || port > 65535 {
		return nil, fmt.Errorf("port %d is not a TCP port (1-65535)", port)
	}
	sb, err := r.Sandbox(ctx, h, sandboxID)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("sandbox %s is not on host %q", sandboxID, h.Host())
	}
	if err != nil {
		return nil, err
	}
	ext, err := r.Extension(sb.Extension)
	if err != nil {
		return nil, err
	}
	t, ok := ext.(Tunneler)
	switch {
	case !ok && len(sb.Services) > 0:
		return nil, fmt.Errorf("tunnels are not supported for %s sandboxes (sandbox %s, profile %s): publish the service's port in the compose file (`ports:`) and connect to the published port instead",
			sb.Extension, sb.ID, sb.Profile)
	case !ok:
		return nil, fmt.Errorf("sandbox %s (profile %s, %s) runs no services to open a tunnel to", sb.ID, sb.Profile, sb.Extension)
	case !slices.Contains(sb.Services, service):
		return nil, fmt.Errorf("sandbox %s has no service %q; its services: %s", sb.ID, service, strings.Join(sb.Services, ", "))
	}
	addr, err := t.ServiceAddress(ctx, h, sb, service, port)
	if err != nil {
		return nil, err
	}
	target := &TunnelTarget{
		Host:    h.Host(),
		Address: addr,
		Dial:    func(ctx context.Context) (net.Conn, error) { return h.Dial(ctx, "tcp", addr) },
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	conn, err := target.Dial(pctx)
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, hosts.ErrForwardingRefused):
		// Says it all; what is behind the port is not known.
		return nil, fmt.Errorf("service %s of sandbox %s: %w", service, sb.ID, err)
	case err != nil && pctx.Err() != nil:
		return nil, fmt.Errorf("service %s of sandbox %s: no answer from %s (port %d) within %s, connecting from host %q: the host does not reach the container's network (a rootless engine's networks are not reachable from the host)",
			service, sb.ID, addr, port, probeTimeout, h.Host())
	case err != nil:
		return nil, fmt.Errorf("service %s of sandbox %s: nothing accepts connections on port %d (%s, connecting from host %q): %w",
			service, sb.ID, port, addr, h.Host(), err)
	}
	_ = conn.Close() // a probe: the connection was accepted, nothing more
	return target, nil
}

// Tunnel is an open tunnel: a listener on this machine relaying to a
// service (TunnelTarget). Close ends it and every connection through it.
type Tunnel struct {
	*hosts.Forward
	Target *TunnelTarget
}

// OpenTunnel checks the target (TunnelTarget), then listens on
// 127.0.0.1:localPort (0: a free port) and relays every connection to it.
// Only loopback: the tunnel is for the machine running Terraform, not for
// its network.
func (r *Registry) OpenTunnel(ctx context.Context, h *hosts.Host, sandboxID, service string, port, localPort int) (*Tunnel, error) {
	if localPort < 0 || localPort > 65535 {
		return nil, fmt.Errorf("local port %d is not a TCP port (0-65535)", localPort)
	}
	target, err := r.TunnelTarget(ctx, h, sandboxID, service, port)
	if err != nil {
		return nil, err
	}
	// Failed relays are logged with the opener's logger, after it returned.
	logCtx := context.WithoutCancel(ctx)
	failed := func(err error) {
		tflog.Warn(logCtx, "tunnel connection not relayed", map[string]any{
			"host": target.Host, "sandbox": sandboxID, "service": service, "address": target.Address, "error": err.Error(),
		})
	}
	fwd, err := hosts.NewForward(net.JoinHostPort("127.0.0.1", strconv.Itoa(localPort)), target.Dial, failed)
	if err != nil {
		return nil, fmt.Errorf("unable to listen on 127.0.0.1:%d for service %s of sandbox %s: %w", localPort, service, sandboxID, err)
	}
	tflog.Debug(ctx, "tunnel open", map[string]any{
		"host": target.Host, "sandbox": sandboxID, "service": service, "address": target.Address, "local": fwd.Addr().String(),
	})
	return &Tunnel{Forward: fwd, Target: target}, nil
}
