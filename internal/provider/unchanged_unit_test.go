package provider

import (
	"context"
	"reflect"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// unknownOf is an unknown value of an attribute field's type: a value no
// field of a model read from a state holds.
func unknownOf(t *testing.T, typ reflect.Type) reflect.Value {
	t.Helper()
	var v any
	switch typ {
	case reflect.TypeFor[types.String]():
		v = types.StringUnknown()
	case reflect.TypeFor[types.Bool]():
		v = types.BoolUnknown()
	case reflect.TypeFor[types.Int64]():
		v = types.Int64Unknown()
	case reflect.TypeFor[types.Float64]():
		v = types.Float64Unknown()
	case reflect.TypeFor[types.Map]():
		v = types.MapUnknown(types.StringType)
	case reflect.TypeFor[types.List]():
		v = types.ListUnknown(types.StringType)
	case reflect.TypeFor[timeouts.Value]():
		v = timeouts.Value{Object: types.ObjectUnknown(nil)}
	default:
		t.Fatalf("no unknown value for a field of type %s: add one here", typ)
	}
	return reflect.ValueOf(v)
}

// stateOf is a state of r whose every attribute is null, as the framework
// reads it: a model got from it holds typed nulls.
func stateOf(t *testing.T, r resource.Resource) tfsdk.State {
	t.Helper()
	ctx := context.Background()
	var schema resource.SchemaResponse
	r.Schema(ctx, resource.SchemaRequest{}, &schema)
	typ := objectType(t, schema.Schema.Type())
	return tfsdk.State{Schema: schema.Schema, Raw: tftypes.NewValue(typ, nullAttributes(typ))}
}

// A change in any field the framework reads, an embedded one's too, is a
// change: each is tried alone, on a model read from a state.
func TestUnitSameModel_seesAChangeInEveryField(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		r     resource.Resource
		model any
	}{{&SandboxResource{}, &sandboxModel{}}, {&SnapshotResource{}, &snapshotModel{}}} {
		state := stateOf(t, c.r)
		read := reflect.ValueOf(c.model).Elem()
		if d := state.Get(ctx, c.model); d.HasError() {
			t.Fatal(d)
		}
		again := reflect.New(read.Type())
		if d := state.Get(ctx, again.Interface()); d.HasError() {
			t.Fatal(d)
		}
		if !sameModel(read, again.Elem()) {
			t.Errorf("%s: one state read twice gives models that are not the same", read.Type().Name())
		}
		for _, f := range reflect.VisibleFields(read.Type()) {
			if f.Anonymous || !f.IsExported() {
				continue
			}
			changed := reflect.New(read.Type()).Elem()
			changed.Set(read)
			changed.FieldByIndex(f.Index).Set(unknownOf(t, f.Type))
			if sameModel(read, changed) {
				t.Errorf("%s.%s changed, and sameModel says the models are the same", read.Type().Name(), f.Name)
			}
		}
	}
}

// countedState is a state that counts its Sets.
type countedState struct {
	*tfsdk.State
	sets int
}

func (c *countedState) Set(ctx context.Context, val any) diag.Diagnostics {
	c.sets++
	return c.State.Set(ctx, val)
}

// A refresh that changes nothing sets nothing; one that changes a field
// sets the state.
func TestUnitSetIfChanged_setsOnlyAChange(t *testing.T) {
	ctx := context.Background()
	state := stateOf(t, &SandboxResource{})
	for name, v := range map[string]any{"id": "abcdefabcdef", "profile": "profile.compose-e2e", "host": "h", "status": "ready",
		"inputs": map[string]string{"repo": "/r"}, "labels": map[string]string{"team": "a"}} {
		if d := state.SetAttribute(ctx, path.Root(name), v); d.HasError() {
			t.Fatal(d)
		}
	}
	counted := &countedState{State: &state}

	var read, again sandboxModel
	if d := state.Get(ctx, &read); d.HasError() {
		t.Fatal(d)
	}
	if d := state.Get(ctx, &again); d.HasError() {
		t.Fatal(d)
	}
	var diags diag.Diagnostics
	setIfChanged(ctx, counted, &read, &again, &diags)
	if diags.HasError() || counted.sets != 0 {
		t.Fatalf("an unchanged model was set %d times: %v", counted.sets, diags)
	}

	again.Status = types.StringValue("stopped")
	setIfChanged(ctx, counted, &read, &again, &diags)
	var status types.String
	if d := state.GetAttribute(ctx, path.Root("status"), &status); d.HasError() || diags.HasError() {
		t.Fatal(d, diags)
	}
	if counted.sets != 1 || status.ValueString() != "stopped" {
		t.Fatalf("a changed model was set %d times, status in state %s; want once, stopped", counted.sets, status)
	}
}

// A field sameModel cannot compare counts as changed, even when its
// values are equal; a field the framework does not read is not compared.
func TestUnitSameModel_fieldsItCannotCompareAreChanges(t *testing.T) {
	type embedded struct {
		Name types.String `tfsdk:"name"`
	}
	name := types.StringValue("n")
	for kind, m := range map[string]any{
		"plain": &struct {
			Plain string `tfsdk:"plain"`
		}{"p"},
		"pointer": &struct {
			Pointer *types.String `tfsdk:"pointer"`
		}{&name},
		"interface": &struct {
			Any attr.Value `tfsdk:"any"`
		}{name},
	} {
		if v := reflect.ValueOf(m).Elem(); sameModel(v, v) {
			t.Errorf("a model whose one field is a %s field is the same as itself", kind)
		}
	}
	type withSkipped struct {
		embedded
		Skipped string `tfsdk:"-"`
	}
	c := func(a, b withSkipped) bool { return sameModel(reflect.ValueOf(&a).Elem(), reflect.ValueOf(&b).Elem()) }
	if !c(withSkipped{embedded{name}, "a"}, withSkipped{embedded{name}, "b"}) {
		t.Error("a field tagged tfsdk:\"-\" was compared")
	}
	if c(withSkipped{embedded{name}, "a"}, withSkipped{embedded{types.StringValue("m")}, "a"}) {
		t.Error("a change in an embedded struct's field was not seen")
	}
}
