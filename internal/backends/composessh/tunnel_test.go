package composessh_test

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/composessh"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// echoPort is where the fixture's echo service listens.
const echoPort = 7000

// tunnelSandbox creates, on h, a sandbox publishing no port: "echo" (an
// echo server on echoPort: busybox nc forking `cat` per connection, which
// answers until the client shuts its side) and "idle"; it is destroyed
// when the test ends.
func tunnelSandbox(t *testing.T, reg *backends.Registry, h *hosts.Host) *backends.Sandbox {
	t.Helper()
	image := testharness.Image(t)
	// busybox nc listens with a backlog of as many connections as it is
	// given -l (two -l: a server that goes on accepting): with two, most
	// of 100 connections made at once are reset before it accepts them.
	listen := strings.Repeat(`"-l", `, 128)
	compose := `services:
  echo:
    image: ` + image + `
    command: ["nc", ` + listen + `"-p", "` + strconv.Itoa(echoPort) + `", "-e", "cat"]
    stop_signal: SIGKILL
    healthcheck:
      test: ["CMD", "sh", "-c", "netstat -ltn | grep -q ':` + strconv.Itoa(echoPort) + ` '"]
      interval: 1s
      retries: 30
  idle:
    image: ` + image + `
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
`
	repo := t.TempDir()
	if err := os.WriteFile(filepath.Join(repo, "compose.yaml"), []byte(compose), 0o644); err != nil {
		t.Fatal(err)
	}
	sb, err := reg.Create(ctx(t), backends.Request{ID: backends.NewID(), Profile: profile(t), Host: h, Inputs: map[string]string{"repo": repo}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := reg.Destroy(ctx(t), h, sb.ID); err != nil {
			t.Error(err)
		}
		if left := leftovers(t, sb.ComposeProject); left != "" {
			t.Errorf("teardown left: %s", left)
		}
	})
	return sb
}

// 100 connections at once through one tunnel, each with its own 64 KiB
// both ways and a half-close, over SSH (direct-tcpip channels on the
// pooled connection, to the container's address) and on the local host.
// (A tunnel's Close is its hosts.Forward's: TestForwardLocal and
// TestForwardOverSSH.)
func TestTunnelHundredConnections(t *testing.T) {
	testharness.RequireDocker(t)
	for name, h := range map[string]*hosts.Host{"ssh": testharness.SSHHost(t), "local": testharness.LocalHost(t)} {
		t.Run(name, func(t *testing.T) {
			reg := backends.NewRegistry(composessh.New(os.Getenv("SANDBOXER_COMPOSE_CMD")))
			sb := tunnelSandbox(t, reg, h)
			tun, err := reg.OpenTunnel(ctx(t), h, sb.ID, "echo", echoPort, 0)
			if err != nil {
				t.Fatal(err)
			}
			addr := tun.Addr().String()
			if ip, _, _ := net.SplitHostPort(addr); ip != "127.0.0.1" {
				t.Fatalf("the tunnel listens on %s, want loopback only", addr)
			}
			if ip, _, _ := net.SplitHostPort(tun.Target.Address); net.ParseIP(ip) == nil || ip == "127.0.0.1" {
				t.Fatalf("target %s is not the container's own address", tun.Target.Address)
			}
			defer func() { _ = tun.Close() }() // the test is over
			testharness.ManyExchanges(t, addr, 100, 64*1024)
		})
	}
}

// Each way a tunnel cannot open says why, in words naming what to change.
// (An sshd refusing forwarding: TestAccTunnel_forwardingRefused, and
// hosts' TestDialForwardingProhibited for the words.)
func TestTunnelDiagnostics(t *testing.T) {
	testharness.RequireDocker(t)
	h := testharness.SSHHost(t)
	reg := backends.NewRegistry(composessh.New(os.Getenv("SANDBOXER_COMPOSE_CMD")))
	sb := tunnelSandbox(t, reg, h)
	open := func(h *hosts.Host, id, service string, port, localPort int) error {
		t.Helper()
		tun, err := reg.OpenTunnel(ctx(t), h, id, service, port, localPort)
		if err == nil {
			_ = tun.Close() // opened when it should not have: the test fails on that
			return errors.New("the tunnel opened")
		}
		t.Log(err)
		return err
	}
	wantIn := func(err error, parts ...string) {
		t.Helper()
		for _, p := range parts {
			if !strings.Contains(err.Error(), p) {
				t.Errorf("error %q does not say %q", err, p)
			}
		}
	}

	wantIn(open(h, sb.ID, "nope", echoPort, 0), `sandbox `+sb.ID+` has no service "nope"; its services: echo, idle`)
	wantIn(open(h, backends.NewID(), "echo", echoPort, 0), "is not on host")
	wantIn(open(h, sb.ID, "echo", 7001, 0), "service echo of sandbox "+sb.ID+": nothing accepts connections on port 7001", "Connection refused")

	// The local port taken already.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = taken.Close() }() // held for the check only
	_, portText, _ := net.SplitHostPort(taken.Addr().String())
	port, err := strconv.Atoi(portText)
	if err != nil {
		t.Fatal(err)
	}
	wantIn(open(h, sb.ID, "echo", echoPort, port), "unable to listen on 127.0.0.1:"+strconv.Itoa(port), "address already in use")

	// A stopped service, then one whose container is gone.
	idle := `$(docker ps -aq --filter label=com.docker.compose.project=` + sb.ComposeProject + ` --filter label=com.docker.compose.service=idle)`
	if out, err := exec.Command("sh", "-c", "docker stop -t 1 "+idle).CombinedOutput(); err != nil {
		t.Fatalf("docker stop: %v %s", err, out)
	}
	wantIn(open(h, sb.ID, "idle", echoPort, 0), "service idle of sandbox "+sb.ID+" is not running (its container is exited)")
	if out, err := exec.Command("sh", "-c", "docker rm -f "+idle).CombinedOutput(); err != nil {
		t.Fatalf("docker rm: %v %s", err, out)
	}
	wantIn(open(h, sb.ID, "idle", echoPort, 0), "service idle of sandbox "+sb.ID+" has no container (removed outside Terraform)")
}
