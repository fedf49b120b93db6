package provider

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/ephemeral"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

var (
	_ ephemeral.EphemeralResource              = &TunnelEphemeralResource{}
	_ ephemeral.EphemeralResourceWithConfigure = &TunnelEphemeralResource{}
	_ ephemeral.EphemeralResourceWithClose     = &TunnelEphemeralResource{}
)

// NewTunnelEphemeralResource is the ephemeral resource constructor.
func NewTunnelEphemeralResource() ephemeral.EphemeralResource { return &TunnelEphemeralResource{} }

// TunnelEphemeralResource is sandboxer_tunnel: a port on this machine's
// loopback relayed to a port of a sandbox's service, for as long as the
// Terraform run needs it. Nothing of it reaches state or plan files.
type TunnelEphemeralResource struct {
	data *providerData
}

// tunnelLocalHost is where tunnels listen: loopback only, so that a tunnel
// serves the machine running Terraform and nothing on its network.
const tunnelLocalHost = "127.0.0.1"

// tunnelSummary is the summary of every diagnostic of a tunnel that could
// not be opened; the detail says why.
const tunnelSummary = "Unable to Open Tunnel"

// openTunnels are the tunnels this provider process holds open, by the key
// Open keeps in the instance's private data: Close gets the private data,
// not the Go value, and finds its listener here.
var openTunnels = struct {
	sync.Mutex
	m map[string]func() // what closes each
}{m: map[string]func(){}}

// privateTunnelKey is the private data key holding an instance's tunnel key.
const privateTunnelKey = "tunnel"

func (r *TunnelEphemeralResource) Metadata(_ context.Context, req ephemeral.MetadataRequest, resp *ephemeral.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_tunnel"
}

func (r *TunnelEphemeralResource) Configure(_ context.Context, req ephemeral.ConfigureRequest, resp *ephemeral.ConfigureResponse) {
	r.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (r *TunnelEphemeralResource) Open(ctx context.Context, req ephemeral.OpenRequest, resp *ephemeral.OpenResponse) {
	var m tunnelModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if m.SandboxID.IsUnknown() || m.Service.IsUnknown() || m.Port.IsUnknown() || m.Host.IsUnknown() || m.LocalPort.IsUnknown() {
		// Terraform and OpenTofu open no ephemeral resource whose
		// configuration is not known yet (a sandbox created by the same
		// plan); were one asked to, its results are not known either.
		if m.Host.IsNull() {
			m.Host = types.StringUnknown()
		}
		if m.LocalPort.IsNull() {
			m.LocalPort = types.Int64Unknown()
		}
		m.LocalHost = types.StringUnknown()
		m.Address = types.StringUnknown()
		resp.Diagnostics.Append(resp.Result.Set(ctx, &m)...)
		return
	}
	if r.data == nil {
		resp.Diagnostics.AddError(tunnelSummary, "The provider is not configured yet: its configuration depends on values not known until apply.")
		return
	}
	host, localPort, closeTunnelFn, err := r.open(ctx, m)
	if err != nil {
		// Every error names the sandbox and the service it concerns.
		resp.Diagnostics.AddError(tunnelSummary, err.Error())
		return
	}
	key, err := registerTunnel(closeTunnelFn)
	if err != nil {
		closeTunnelFn() // never handed out
		resp.Diagnostics.AddError(tunnelSummary, err.Error())
		return
	}
	resp.Diagnostics.Append(resp.Private.SetKey(ctx, privateTunnelKey, key)...)
	if resp.Diagnostics.HasError() {
		closeTunnel(key)
		return
	}
	m.Host = types.StringValue(host)
	m.LocalHost = types.StringValue(tunnelLocalHost)
	m.LocalPort = types.Int64Value(int64(localPort))
	m.Address = types.StringValue(tunnelLocalHost + ":" + strconv.Itoa(localPort))
	resp.Diagnostics.Append(resp.Result.Set(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		closeTunnel(key)
	}
}

// open opens the tunnel m asks for, through the host's connection or the
// cluster's API server, and returns the host's (or cluster's) name, the
// local port, and what closes it.
func (r *TunnelEphemeralResource) open(ctx context.Context, m tunnelModel) (string, int, func(), error) {
	id, service, port, localPort := m.SandboxID.ValueString(), m.Service.ValueString(), int(m.Port.ValueInt64()), int(m.LocalPort.ValueInt64())
	if c, ok := r.data.cluster(m.Host.ValueString()); ok {
		t, err := r.data.kube.OpenTunnel(ctx, c, id, service, port, localPort)
		if err != nil {
			return "", 0, nil, err
		}
		_, p, _ := net.SplitHostPort(t.Address())
		n, _ := strconv.Atoi(p) // an address the forward made
		return c.Name, n, t.Close, nil
	}
	h, _, err := r.data.locateSandbox(ctx, id, m.Host.ValueString())
	if err != nil {
		return "", 0, nil, err
	}
	t, err := r.data.registry.OpenTunnel(ctx, h, id, service, port, localPort)
	if err != nil {
		return "", 0, nil, err
	}
	// The listener is gone either way; its error says nothing to act on.
	return h.Host(), t.Addr().Port, func() { _ = t.Close() }, nil
}

// Close ends the tunnel and every connection through it. A key this
// process does not hold is a tunnel already gone (with the process that
// opened it): nothing to do.
func (r *TunnelEphemeralResource) Close(ctx context.Context, req ephemeral.CloseRequest, resp *ephemeral.CloseResponse) {
	key, diags := req.Private.GetKey(ctx, privateTunnelKey)
	resp.Diagnostics.Append(diags...)
	if len(key) > 0 {
		closeTunnel(key)
	}
}

// registerTunnel keeps a tunnel's closeFn under a fresh key and returns the key as private
// data holds it (JSON).
func registerTunnel(closeFn func()) ([]byte, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("unable to make a tunnel key: %w", err)
	}
	key := hex.EncodeToString(b)
	openTunnels.Lock()
	openTunnels.m[key] = closeFn
	openTunnels.Unlock()
	return json.Marshal(key)
}

// closeTunnel closes and forgets the tunnel under the private data key.
func closeTunnel(private []byte) {
	var key string
	if json.Unmarshal(private, &key) != nil {
		return // not a key of ours: nothing of ours to close
	}
	openTunnels.Lock()
	closeFn := openTunnels.m[key]
	delete(openTunnels.m, key)
	openTunnels.Unlock()
	if closeFn != nil {
		closeFn()
	}
}
