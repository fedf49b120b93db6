package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// A create that fails with something left on the host keeps the sandbox
// in state (tainted), with every value known: Terraform refuses a state
// with unknowns after an apply ("Provider returned invalid result
// object"). Whatever the plan left unknown, failedCreate settles it.
func TestFailedCreateLeavesNothingUnknown(t *testing.T) {
	ctx := context.Background()
	var sr resource.SchemaResponse
	(&SandboxResource{}).Schema(ctx, resource.SchemaRequest{}, &sr)
	if sr.Diagnostics.HasError() {
		t.Fatal(sr.Diagnostics)
	}
	typ, ok := sr.Schema.Type().TerraformType(ctx).(tftypes.Object)
	if !ok {
		t.Fatal("the schema's type is not an object")
	}
	// The plan's computed values unknown, the rest (the configuration's,
	// known at apply) null.
	vals := map[string]tftypes.Value{}
	for name, at := range typ.AttributeTypes {
		vals[name] = tftypes.NewValue(at, nil)
		if a, ok := sr.Schema.Attributes[name]; ok && a.IsComputed() {
			vals[name] = tftypes.NewValue(at, tftypes.UnknownValue)
		}
	}
	vals["profile"] = tftypes.NewValue(tftypes.String, "profile.compose-e2e")
	vals["host"] = tftypes.NewValue(tftypes.String, "h")
	plan := tfsdk.Plan{Schema: sr.Schema, Raw: tftypes.NewValue(typ, vals)}
	var m sandboxModel
	if diags := plan.Get(ctx, &m); diags.HasError() {
		t.Fatal(diags)
	}
	m.failedCreate("0123456789ab")
	state := tfsdk.State{Schema: sr.Schema, Raw: tftypes.NewValue(typ, nil)}
	if diags := state.Set(ctx, &m); diags.HasError() {
		t.Fatal(diags)
	}
	err := tftypes.Walk(state.Raw, func(p *tftypes.AttributePath, v tftypes.Value) (bool, error) {
		if !v.IsKnown() {
			t.Errorf("%s is unknown in the state of a failed create", p)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
