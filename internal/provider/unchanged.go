package provider

import (
	"context"
	"reflect"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
)

// A refresh or a plan that finds nothing to change sets nothing: the
// framework's response already holds the state (the plan) it was given,
// and its Set converts the whole model through the schema again, about a
// tenth of the provider's CPU in a plan of 50 sandboxes and 50 snapshots.

// setter is tfsdk.State and tfsdk.Plan.
type setter interface {
	Set(ctx context.Context, val any) diag.Diagnostics
}

// setIfChanged sets model (a pointer to a model struct) on to, unless it
// holds the same values as read, the model as it was read from the
// response's own prior value.
func setIfChanged[M any](ctx context.Context, to setter, read, model *M, diags *diag.Diagnostics) {
	if sameModel(reflect.ValueOf(read).Elem(), reflect.ValueOf(model).Elem()) {
		return
	}
	diags.Append(to.Set(ctx, model)...)
}

// sameModel reports whether two model structs of one type hold equal
// values (attr.Value.Equal) in every field the framework reads, the
// fields of embedded structs included. A field of another kind (a
// pointer, an interface, a plain Go value) counts as changed: the model
// is then set, as it always was. (A number read at the state's precision
// may differ from the float64 computed for it: it is then set too.)
func sameModel(a, b reflect.Value) bool {
	t := a.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			if f.Type.Kind() != reflect.Struct || !sameModel(a.Field(i), b.Field(i)) {
				return false
			}
			continue
		}
		if !f.IsExported() || f.Tag.Get("tfsdk") == "-" {
			continue
		}
		if k := f.Type.Kind(); k == reflect.Pointer || k == reflect.Interface {
			return false
		}
		av, aok := a.Field(i).Interface().(attr.Value)
		bv, bok := b.Field(i).Interface().(attr.Value)
		if !aok || !bok || !av.Equal(bv) {
			return false
		}
	}
	return true
}
