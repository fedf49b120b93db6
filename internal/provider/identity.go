package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/identityschema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// Resource identity (Terraform and OpenTofu >= 1.12): a sandbox or a snapshot is
// identified by the host it lives on and its id, the two halves of its
// import id HOST/ID, so an import block may name it either way:
//
//	import {
//	  to       = sandboxer_sandbox.app
//	  identity = { host = "build-1", id = "3f9c2a7b1d0e" }
//	}
//
// Clients without identity support (older CLIs) never see it: the framework
// leaves the identity unset and nothing here sets one.

// identityModel is a sandbox's or a snapshot's identity.
type identityModel struct {
	Host types.String `tfsdk:"host"`
	ID   types.String `tfsdk:"id"`
}

// hostIDIdentity is the identity schema of a resource that lives on a host
// under an id; what names the resource in descriptions.
func hostIDIdentity(what string) identityschema.Schema {
	return identityschema.Schema{Attributes: map[string]identityschema.Attribute{
		"host": identityschema.StringAttribute{RequiredForImport: true,
			Description: "Name of the host block (or `local`) the " + what + " lives on."},
		"id": identityschema.StringAttribute{RequiredForImport: true,
			Description: "The " + what + "'s id on that host."},
	}}
}

// setIdentity sets a resource's identity from its host and id, when the
// client supports identities (identity is nil otherwise).
func setIdentity(ctx context.Context, identity *tfsdk.ResourceIdentity, host, id types.String, diags *diag.Diagnostics) {
	if identity == nil || host.IsUnknown() || id.IsUnknown() || id.IsNull() {
		return
	}
	diags.Append(identity.Set(ctx, identityModel{Host: host, ID: id})...)
}

// importTarget is the host and id an import names: the import id HOST/ID
// (`terraform import`, or an import block's `id`), or an import block's
// `identity`. Both are held to the same rules (parseImportID).
func importTarget(ctx context.Context, req resource.ImportStateRequest, what string) (host, id string, err error) {
	if req.ID != "" || req.Identity == nil {
		return parseImportID(req.ID, what)
	}
	var m identityModel
	if diags := req.Identity.Get(ctx, &m); diags.HasError() {
		return "", "", fmt.Errorf("unreadable import identity: want { host = \"HOST\", id = \"%s\" }", what)
	}
	rule := fmt.Sprintf("import identity { host = %q, id = %q } must name a host and a %s", m.Host.ValueString(), m.ID.ValueString(), what)
	return checkHostID(m.Host.ValueString(), m.ID.ValueString(), rule, what)
}
