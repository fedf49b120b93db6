package hosts_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// echoServer is a TCP server on loopback that sends back what it reads and
// then shuts its writing side when the client shut its own: it answers
// only once it has been told there is nothing more, as a request/response
// protocol over a half-closed connection does.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = ln.Close() // ends the accept loop
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { _ = c.Close() }() // the exchange is over
				data, err := io.ReadAll(c)
				if err != nil {
					return
				}
				_, _ = c.Write(data) // a client gone midway sees it in its own check
				if tc, ok := c.(*net.TCPConn); ok {
					_ = tc.CloseWrite() // the client's read shows whether the answer arrived whole
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func testForward(t *testing.T, h *hosts.Host, target string) {
	fwd, err := hosts.NewForward("127.0.0.1:0", func(ctx context.Context) (net.Conn, error) { return h.Dial(ctx, "tcp", target) }, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := fwd.Addr().String()
	testharness.ManyExchanges(t, addr, 100, 64*1024)
	// A connection left open, mid-exchange, when the forward closes.
	open, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = open.Close() }() // checked below
	if _, err := open.Write([]byte("unfinished")); err != nil {
		t.Fatal(err)
	}
	if err := fwd.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	testharness.CheckForwardClosed(t, addr, open)
}

// A local host's forward: 100 connections at once, each through with its
// own data both ways, then Close leaves nothing listening or open.
func TestForwardLocal(t *testing.T) {
	testForward(t, testharness.LocalHost(t), echoServer(t))
}

// The same through the harness sshd: each connection is a direct-tcpip
// channel on the one pooled connection (sshd connects to the echo server,
// which is on the same machine).
func TestForwardOverSSH(t *testing.T) {
	testForward(t, testharness.SSHHost(t), echoServer(t))
}

// A connection the far end refuses: the host says so, naming the address.
func TestDialRefused(t *testing.T) {
	for name, h := range map[string]*hosts.Host{"local": testharness.LocalHost(t), "ssh": testharness.SSHHost(t)} {
		t.Run(name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			_ = ln.Close() // a loopback address nothing listens on
			_, err = h.Dial(context.Background(), "tcp", addr)
			t.Log(err)
			if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(strings.ToLower(err.Error()), "refused") {
				t.Fatalf("got %v, want a refusal naming %s", err, addr)
			}
		})
	}
}

// An sshd with AllowTcpForwarding no answers "administratively prohibited";
// the error names the setting instead, and the connection stays usable for
// commands.
func TestDialForwardingProhibited(t *testing.T) {
	sshd := testharness.StartPrivateSSHD(t, "AllowTcpForwarding no")
	tr := newSSH(t, sshd.SSHConfig("no-forwarding"))
	h := &hosts.Host{Transport: tr, RootDir: t.TempDir()}
	_, err := h.Dial(context.Background(), "tcp", echoServer(t))
	t.Log(err)
	if !errors.Is(err, hosts.ErrForwardingRefused) || !strings.Contains(err.Error(), "AllowTcpForwarding yes") ||
		!strings.Contains(err.Error(), "administratively prohibited") {
		t.Fatalf("got %v, want ErrForwardingRefused naming AllowTcpForwarding", err)
	}
	if out, err := run(t, tr, "echo still here"); err != nil || out != "still here\n" {
		t.Fatalf("the connection is not usable after the refusal: %q %v", out, err)
	}
	if n := sshd.Accepted(); n != 1 {
		t.Fatalf("sshd accepted %d connections, want 1: a refusal is an answer, not a dead connection", n)
	}
}
