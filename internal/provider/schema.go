package provider

import (
	"fmt"
	"slices"

	actionschema "github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
)

// actionAttributes is the action form of a resource's arguments, for an
// action that performs the resource's operation (sandboxer_snapshot,
// sandboxer_restore): the same types, descriptions and validators, so the
// two cannot drift apart. An action has no state, so what shapes one
// (computed values, defaults, plan modifiers) is dropped: an argument the
// resource requires, or one named in required, is required; every other
// one is optional.
func actionAttributes(args map[string]schema.Attribute, required ...string) map[string]actionschema.Attribute {
	out := make(map[string]actionschema.Attribute, len(args))
	for name, a := range args {
		req := a.IsRequired() || slices.Contains(required, name)
		switch a := a.(type) {
		case schema.StringAttribute:
			out[name] = actionschema.StringAttribute{Required: req, Optional: !req,
				MarkdownDescription: a.MarkdownDescription, Validators: a.Validators}
		case schema.BoolAttribute:
			out[name] = actionschema.BoolAttribute{Required: req, Optional: !req,
				MarkdownDescription: a.MarkdownDescription, Validators: a.Validators}
		case schema.ListAttribute:
			out[name] = actionschema.ListAttribute{Required: req, Optional: !req, ElementType: a.ElementType,
				MarkdownDescription: a.MarkdownDescription, Validators: a.Validators}
		case schema.MapAttribute:
			out[name] = actionschema.MapAttribute{Required: req, Optional: !req, ElementType: a.ElementType,
				MarkdownDescription: a.MarkdownDescription, Validators: a.Validators}
		default:
			// A schema is built when the provider starts: every test sees this.
			panic(fmt.Sprintf("argument %s: no action form of %T", name, a))
		}
	}
	return out
}
