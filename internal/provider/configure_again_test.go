package provider

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// providerConfigWith is a provider configuration with one host block,
// host's attributes set and every other attribute null.
func providerConfigWith(t *testing.T, p *SandboxerProvider, host map[string]string) tfsdk.Config {
	t.Helper()
	ctx := context.Background()
	var sresp provider.SchemaResponse
	p.Schema(ctx, provider.SchemaRequest{}, &sresp)
	typ := objectType(t, sresp.Schema.Type())
	vals := nullAttributes(typ)
	list, ok := typ.AttributeTypes["host"].(tftypes.List)
	if !ok {
		t.Fatal("host blocks are not a list")
	}
	obj, ok := list.ElementType.(tftypes.Object)
	if !ok {
		t.Fatal("a host block is not an object")
	}
	hv := nullAttributes(obj)
	for name, v := range host {
		hv[name] = tftypes.NewValue(tftypes.String, v)
	}
	vals["host"] = tftypes.NewValue(list, []tftypes.Value{tftypes.NewValue(obj, hv)})
	return tfsdk.Config{Schema: sresp.Schema, Raw: tftypes.NewValue(typ, vals)}
}

// connectionsTo is this process's established TCP connections to addr,
// by socket inode (/proc/net/tcp, matched to this process's sockets).
func connectionsTo(t *testing.T, addr string) map[string]bool {
	t.Helper()
	_, portText, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(portText)
	mine := map[string]bool{}
	fds, _ := filepath.Glob("/proc/self/fd/*") // the pattern is valid
	for _, fd := range fds {
		if link, err := os.Readlink(fd); err == nil && strings.HasPrefix(link, "socket:[") {
			mine[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	data, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Skip("no /proc/net/tcp here")
	}
	conns := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		// remote address is "IP:PORT" in hex; state 01 is ESTABLISHED.
		if len(f) > 9 && f[3] == "01" && strings.HasSuffix(f[2], fmt.Sprintf(":%04X", port)) && mine[f[9]] {
			conns[f[9]] = true
		}
	}
	return conns
}

// A provider configured again closes the SSH connections of the
// configuration before: nothing uses them any more, and they would stay
// open (keepalives and all) for the life of the process.
func TestConfiguredAgainClosesTheConnectionsBefore(t *testing.T) {
	addr := testharness.Env(t, "SANDBOXER_TEST_SSH_ADDR")
	p := &SandboxerProvider{version: "test"}
	cfg := providerConfigWith(t, p, map[string]string{
		"name": "h", "address": addr, "user": testharness.Env(t, "SANDBOXER_TEST_SSH_USER"),
		"private_key_file": testharness.Env(t, "SANDBOXER_TEST_SSH_KEY"), "known_hosts_file": testharness.Env(t, "SANDBOXER_TEST_KNOWN_HOSTS"),
		"root_dir": t.TempDir(),
	})
	configure := func() *providerData {
		var resp provider.ConfigureResponse
		p.Configure(t.Context(), provider.ConfigureRequest{Config: cfg}, &resp)
		if resp.Diagnostics.HasError() {
			t.Fatal(resp.Diagnostics)
		}
		data, ok := resp.ResourceData.(*providerData)
		if !ok {
			t.Fatalf("ResourceData is %T", resp.ResourceData)
		}
		return data
	}
	before := connectionsTo(t, addr)
	first := configure()
	if _, err := hosts.Output(t.Context(), first.hosts["h"], "true"); err != nil {
		t.Fatal(err)
	}
	var firsts []string
	for c := range connectionsTo(t, addr) {
		if !before[c] {
			firsts = append(firsts, c)
		}
	}
	if len(firsts) != 1 {
		t.Fatalf("%d new connections to the host after a command, want 1", len(firsts))
	}
	// The second configuration may already have one of its own (it warms
	// the host, ADR 0011): only the first's must be gone.
	second := configure()
	if connectionsTo(t, addr)[firsts[0]] {
		t.Fatal("the first configuration's connection to the host stays open once configured again")
	}
	t.Cleanup(func() { p.replaceConfiguration(nil) })
	if _, err := hosts.Output(t.Context(), second.hosts["h"], "true"); err != nil {
		t.Fatal(err)
	}
}
