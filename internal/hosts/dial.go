package hosts

import (
	"context"
	"errors"
	"fmt"
	"net"

	"golang.org/x/crypto/ssh"
)

// Dialer is a Transport that can open a TCP connection from its host: to
// an address the host reaches (a container on one of its networks), as the
// host itself would, whatever the machine running Terraform can reach.
type Dialer interface {
	Dial(ctx context.Context, network, addr string) (net.Conn, error)
}

var (
	_ Dialer = (*Local)(nil)
	_ Dialer = (*SSH)(nil)
)

// ErrForwardingRefused is the host's sshd refusing to open connections for
// its clients (AllowTcpForwarding no, or a PermitOpen that leaves the
// address out).
var ErrForwardingRefused = errors.New("the host's sshd refuses TCP forwarding")

// Dial opens a connection from the host to addr.
func (h *Host) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d, ok := h.Transport.(Dialer)
	if !ok {
		return nil, fmt.Errorf("host %q cannot open connections (transport %T)", h.Host(), h.Transport)
	}
	return d.Dial(ctx, network, addr)
}

// Dial connects from this machine.
func (l *Local) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// Dial opens a direct-tcpip channel on the pooled connection: sshd makes
// the connection and relays it. Such channels are not sessions (sshd's
// MaxSessions does not count them), so they take no session token and any
// number may be open at once. A connection found dead is redialled once,
// as for commands. sshd answers once its own connect succeeded or failed,
// which to an address that drops packets takes as long as the host's TCP
// takes to give up (minutes): a slow answer is not a dead connection, so
// unlike a session request this is bounded by ctx alone and never drops
// the connection.
func (s *SSH) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	client, err := s.connected(ctx, nil)
	if err != nil {
		return nil, err
	}
	// Bounded by the connection's end too (see withContext).
	open := func(client *ssh.Client) (net.Conn, error) {
		return withContext(ctx, s.gone(client), func() (net.Conn, error) { return client.Dial(network, addr) },
			func(c net.Conn) { _ = c.Close() })
	}
	conn, err := open(client)
	var rejected *ssh.OpenChannelError
	if err != nil && !errors.As(err, &rejected) && ctx.Err() == nil {
		// Not an answer from sshd: the connection died under the pool.
		if client, err = s.connected(ctx, client); err != nil {
			return nil, err
		}
		conn, err = open(client)
	}
	if err == nil {
		return conn, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if errors.As(err, &rejected) {
		switch rejected.Reason {
		case ssh.Prohibited:
			// What OpenSSH answers under AllowTcpForwarding no (its message is
			// only "open failed"): say which setting, since nothing else will.
			return nil, fmt.Errorf("host %q (%s): %w: it answered %q to a connection to %s; set AllowTcpForwarding yes (or local) in its sshd_config for user %q (and a PermitOpen, if any, that allows %s)",
				s.cfg.Name, s.cfg.Address, ErrForwardingRefused, rejected.Reason.String(), addr, s.cfg.User, addr)
		case ssh.ConnectionFailed:
			return nil, fmt.Errorf("host %q (%s) could not connect to %s: %s", s.cfg.Name, s.cfg.Address, addr, rejected.Message)
		}
	}
	return nil, fmt.Errorf("host %q (%s): unable to connect to %s through the SSH connection: %w", s.cfg.Name, s.cfg.Address, addr, err)
}
