package provider

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/ephemeral"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// sandboxer_tunnel is served as an ephemeral resource with the arguments
// and results its documentation names, none of them sensitive (an address
// on loopback is no secret; it only must not outlive the run).
func TestUnitTunnel_schema(t *testing.T) {
	server, err := providerserver.NewProtocol6WithError(New("test")())()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := server.GetProviderSchema(context.Background(), &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range resp.Diagnostics {
		t.Errorf("schema diagnostic: %s: %s", d.Summary, d.Detail)
	}
	s, ok := resp.EphemeralResourceSchemas["sandboxer_tunnel"]
	if !ok {
		t.Fatalf("no ephemeral resource sandboxer_tunnel; have %v", resp.EphemeralResourceSchemas)
	}
	type kind struct{ required, optional, computed bool }
	want := map[string]kind{
		"sandbox_id": {required: true},
		"service":    {required: true},
		"port":       {required: true},
		"host":       {optional: true, computed: true},
		"local_port": {optional: true, computed: true},
		"local_host": {computed: true},
		"address":    {computed: true},
	}
	got := map[string]kind{}
	for _, a := range s.Block.Attributes {
		got[a.Name] = kind{a.Required, a.Optional, a.Computed}
		if a.Sensitive {
			t.Errorf("%s is sensitive", a.Name)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("attributes %v, want %v", got, want)
	}
}

// Arguments a tunnel cannot have are refused when the configuration is
// validated, before any host is asked anything; a host the provider does
// not declare, and a sandbox the host does not have, when the tunnel opens.
// Nothing is written on the host: its root stays empty.
func TestUnitTunnel_argumentsRefused(t *testing.T) {
	requireCLI(t)
	root := t.TempDir()
	provider := fmt.Sprintf(`
provider "sandboxer" {
  host {
    name     = "build"
    local    = true
    root_dir = %q
  }
}
`, root)
	tunnel := func(args string) string {
		return provider + `
ephemeral "sandboxer_tunnel" "db" {
` + args + `
}
`
	}
	const ok = "sandbox_id = \"3f9c2a7b1d0e\"\nservice = \"db\"\n"
	var steps []resource.TestStep
	for _, c := range []struct{ args, want string }{
		{ok + "port = 0", `Attribute port value must be between 1 and 65535, got: 0`},
		{ok + "port = 65536", `Attribute port value must be between 1 and 65535, got: 65536`},
		{ok + "port = 5432\nlocal_port = -1", `Invalid Local Port[\s\S]*local_port -1 is not a TCP port \(1-65535\)`},
		{ok + "port = 5432\nlocal_port = 70000", `Invalid Local Port[\s\S]*local_port 70000 is not a TCP port \(1-65535\)`},
		{ok + "port = 5432\nlocal_port = 0", `Invalid Local Port[\s\S]*leave local_port unset for a free port`},
		{`sandbox_id = "../etc"` + "\nservice = \"db\"\nport = 5432", `Invalid Id`},
		{`sandbox_id = "3f9c2a7b1d0e"` + "\nservice = \"db; rm -rf /\"\nport = 5432", `must be a compose service name`},
		{`sandbox_id = "3f9c2a7b1d0e"` + "\nport = 5432", `The argument "service" is required`},
		{ok, `The argument "port" is required`},
		{ok + "port = 5432\nhost = \"nowhere\"", `Unable to Open Tunnel[\s\S]*host "nowhere" is not declared in the provider block; declared hosts: build, local`},
		{ok + "port = 5432\nhost = \"build\"", `Unable to Open Tunnel[\s\S]*sandbox 3f9c2a7b1d0e is not on host "build"`},
	} {
		steps = append(steps, resource.TestStep{Config: tunnel(c.args), PlanOnly: true, ExpectError: wrapped(c.want)})
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		TerraformVersionChecks:   ephemeralCLIs,
		Steps:                    steps,
	})
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != ".sandboxer" {
			t.Errorf("a refused tunnel left %s in the host's root", e.Name())
		}
	}
	if _, err := os.Stat(root + "/.sandboxer/sandboxes"); err == nil {
		t.Error("a refused tunnel made the host's record directory")
	}
}

// A tunnel whose sandbox is not known yet (created by the same plan) opens
// nothing and has results not known yet either; it never gets as far as
// the provider's hosts (this one has none configured).
func TestUnitTunnel_unknownConfigOpensNothing(t *testing.T) {
	ctx := context.Background()
	r := &TunnelEphemeralResource{}
	var s ephemeral.SchemaResponse
	r.Schema(ctx, ephemeral.SchemaRequest{}, &s)
	typ := s.Schema.Type().TerraformType(ctx)
	config := tftypes.NewValue(typ, map[string]tftypes.Value{
		"host":       tftypes.NewValue(tftypes.String, nil),
		"sandbox_id": tftypes.NewValue(tftypes.String, tftypes.UnknownValue),
		"service":    tftypes.NewValue(tftypes.String, "db"),
		"port":       tftypes.NewValue(tftypes.Number, 5432),
		"local_port": tftypes.NewValue(tftypes.Number, nil),
		"local_host": tftypes.NewValue(tftypes.String, nil),
		"address":    tftypes.NewValue(tftypes.String, nil),
	})
	resp := ephemeral.OpenResponse{Result: tfsdk.EphemeralResultData{Schema: s.Schema, Raw: config}}
	r.Open(ctx, ephemeral.OpenRequest{Config: tfsdk.Config{Schema: s.Schema, Raw: config}}, &resp)
	if resp.Diagnostics.HasError() {
		t.Fatalf("diagnostics: %v", resp.Diagnostics)
	}
	var m tunnelModel
	if d := resp.Result.Get(ctx, &m); d.HasError() {
		t.Fatal(d)
	}
	if !m.Address.IsUnknown() || !m.LocalPort.IsUnknown() || !m.LocalHost.IsUnknown() || !m.Host.IsUnknown() || m.Service.ValueString() != "db" {
		t.Fatalf("results %+v, want the arguments and unknown results", m)
	}
}
