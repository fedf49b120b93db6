package provider

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/ephemeral"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
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
	m map[string]*backends.Tunnel
}{m: map[string]*backends.Tunnel{}}

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
	id, service, port := m.SandboxID.ValueString(), m.Service.ValueString(), int(m.Port.ValueInt64())
	h, _, err := r.data.locateSandbox(ctx, id, m.Host.ValueString())
	if err != nil {
		resp.Diagnostics.AddError(tunnelSummary, err.Error())
		return
	}
	t, err := r.data.registry.OpenTunnel(ctx, h, id, service, port, int(m.LocalPort.ValueInt64()))
	if err != nil {
		// Every error names the sandbox and the service it concerns.
		resp.Diagnostics.AddError(tunnelSummary, err.Error())
		return
	}
	key, err := registerTunnel(t)
	if err != nil {
		_ = t.Close() // never handed out
		resp.Diagnostics.AddError(tunnelSummary, err.Error())
		return
	}
	resp.Diagnostics.Append(resp.Private.SetKey(ctx, privateTunnelKey, key)...)
	if resp.Diagnostics.HasError() {
		closeTunnel(key)
		return
	}
	localPort := t.Addr().Port
	m.Host = types.StringValue(h.Host())
	m.LocalHost = types.StringValue(tunnelLocalHost)
	m.LocalPort = types.Int64Value(int64(localPort))
	m.Address = types.StringValue(tunnelLocalHost + ":" + strconv.Itoa(localPort))
	resp.Diagnostics.Append(resp.Result.Set(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		closeTunnel(key)
	}
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

// registerTunnel keeps t under a fresh key and returns the key as private
// data holds it (JSON).
func registerTunnel(t *backends.Tunnel) ([]byte, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("unable to make a tunnel key: %w", err)
	}
	key := hex.EncodeToString(b)
	openTunnels.Lock()
	openTunnels.m[key] = t
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
	t := openTunnels.m[key]
	delete(openTunnels.m, key)
	openTunnels.Unlock()
	if t != nil {
		_ = t.Close() // the listener is gone either way; its error says nothing to act on
	}
}
