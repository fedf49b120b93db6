package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// Values of a schema built by hand, for tests that give the provider a
// configuration or a state without Terraform.

// objectType is the Terraform type of a schema's Type(): an object.
func objectType(t *testing.T, typ attr.Type) tftypes.Object {
	t.Helper()
	obj, ok := typ.TerraformType(context.Background()).(tftypes.Object)
	if !ok {
		t.Fatalf("the schema's type %s is not an object", typ)
	}
	return obj
}

// nullAttributes is a null value of each of obj's attributes.
func nullAttributes(obj tftypes.Object) map[string]tftypes.Value {
	vals := make(map[string]tftypes.Value, len(obj.AttributeTypes))
	for name, at := range obj.AttributeTypes {
		vals[name] = tftypes.NewValue(at, nil)
	}
	return vals
}
