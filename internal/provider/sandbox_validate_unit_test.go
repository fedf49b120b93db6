package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// configWith builds a sandboxer_sandbox configuration in which every
// attribute is null but the given ones.
func configWith(t *testing.T, set map[string]tftypes.Value) tfsdk.Config {
	t.Helper()
	ctx := context.Background()
	var sresp resource.SchemaResponse
	(&SandboxResource{}).Schema(ctx, resource.SchemaRequest{}, &sresp)
	typ, ok := sresp.Schema.Type().TerraformType(ctx).(tftypes.Object)
	if !ok {
		t.Fatalf("the sandbox schema's type is %T, not an object", sresp.Schema.Type().TerraformType(ctx))
	}
	vals := map[string]tftypes.Value{}
	for name, at := range typ.AttributeTypes {
		vals[name] = tftypes.NewValue(at, nil)
		if v, ok := set[name]; ok {
			vals[name] = v
		}
	}
	return tfsdk.Config{Schema: sresp.Schema, Raw: tftypes.NewValue(typ, vals)}
}

func TestEnvWONeedsAWriteOnlyCapableCLI(t *testing.T) {
	envWO := tftypes.NewValue(tftypes.Map{ElementType: tftypes.String}, map[string]tftypes.Value{
		"TOKEN": tftypes.NewValue(tftypes.String, "secret"),
	})
	for _, c := range []struct {
		writeOnly bool
		set       map[string]tftypes.Value
		wantError bool
	}{
		{writeOnly: false, set: map[string]tftypes.Value{"env_wo": envWO}, wantError: true},
		{writeOnly: true, set: map[string]tftypes.Value{"env_wo": envWO}},
		{writeOnly: false, set: nil}, // no env_wo: any CLI will do
	} {
		req := resource.ValidateConfigRequest{Config: configWith(t, c.set)}
		req.ClientCapabilities.WriteOnlyAttributesAllowed = c.writeOnly
		var resp resource.ValidateConfigResponse
		(&SandboxResource{}).ValidateConfig(context.Background(), req, &resp)
		if got := resp.Diagnostics.HasError(); got != c.wantError {
			t.Fatalf("write-only capable=%v, env_wo set=%v: error=%v, want %v (%v)", c.writeOnly, c.set != nil, got, c.wantError, resp.Diagnostics)
		}
		if c.wantError {
			detail := resp.Diagnostics.Errors()[0].Detail()
			if !strings.Contains(detail, "Terraform >= 1.11") || !strings.Contains(detail, "OpenTofu >= 1.11") {
				t.Fatalf("the diagnostic does not name the versions needed: %s", detail)
			}
		}
	}
}
