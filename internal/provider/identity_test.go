package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	tfresource "github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"
)

// identityImport is an import request carrying an identity (an import
// block's `identity = { host, id }`), as the framework hands it over.
func identityImport(host, id any) resource.ImportStateRequest {
	typ := tftypes.Object{AttributeTypes: map[string]tftypes.Type{"host": tftypes.String, "id": tftypes.String}}
	return resource.ImportStateRequest{Identity: &tfsdk.ResourceIdentity{
		Schema: hostIDIdentity("sandbox"),
		Raw: tftypes.NewValue(typ, map[string]tftypes.Value{
			"host": tftypes.NewValue(tftypes.String, host), "id": tftypes.NewValue(tftypes.String, id),
		}),
	}}
}

// An import identity is held to the import id's rules, before any host is
// contacted; a good one gives the host and id.
func TestImportIdentityChecked(t *testing.T) {
	ctx := context.Background()
	host, id, err := importTarget(ctx, identityImport("build-1", "3f9c2a7b1d0e"), "SANDBOX_ID")
	if err != nil || host != "build-1" || id != "3f9c2a7b1d0e" {
		t.Fatalf("good identity: %q %q %v", host, id, err)
	}
	for _, bad := range [][2]any{{"build-1", "../../etc"}, {"build-1", "$(id)"}, {"a/b", "x"}, {"", "x"}, {"h", ""}, {"h h", "x"}, {nil, "x"}} {
		if _, _, err := importTarget(ctx, identityImport(bad[0], bad[1]), "SANDBOX_ID"); err == nil || !strings.Contains(err.Error(), "import identity") {
			t.Errorf("identity %v accepted (%v)", bad, err)
		}
	}
	// The import id keeps its own form in messages.
	if _, _, err := importTarget(ctx, resource.ImportStateRequest{ID: "bar/../../etc"}, "SANDBOX_ID"); err == nil || !strings.Contains(err.Error(), "HOST/SANDBOX_ID") {
		t.Errorf("import id bar/../../etc: %v", err)
	}
}

// A sandbox and a snapshot on a local host carry the identity { host, id },
// and an import block naming that identity imports them with an empty plan.
// Needs a CLI with resource identities (Terraform or OpenTofu >= 1.12);
// older ones skip it.
func TestUnitIdentityImport(t *testing.T) {
	requireCLI(t)
	root := t.TempDir()
	config := fmt.Sprintf(`
provider "sandboxer" {
  host {
    name     = "build"
    local    = true
    root_dir = %q
  }
}

resource "sandboxer_sandbox" "ws" {
  profile = "profile.workspace"
  host    = "build"
}

resource "sandboxer_snapshot" "s" {
  sandbox_id = sandboxer_sandbox.ws.id
  host       = "build"
  name       = "first"
}
`, root)
	tfresource.UnitTest(t, tfresource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_12_0)},
		Steps: []tfresource.TestStep{
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectIdentity("sandboxer_sandbox.ws", map[string]knownvalue.Check{
						"host": knownvalue.StringExact("build"), "id": knownvalue.NotNull()}),
					statecheck.ExpectIdentityValueMatchesState("sandboxer_sandbox.ws", tfjsonpath.New("id")),
					statecheck.ExpectIdentity("sandboxer_snapshot.s", map[string]knownvalue.Check{
						"host": knownvalue.StringExact("build"), "id": knownvalue.NotNull()}),
					statecheck.ExpectIdentityValueMatchesState("sandboxer_snapshot.s", tfjsonpath.New("id")),
				},
			},
			{
				ResourceName:    "sandboxer_sandbox.ws",
				Config:          config,
				ImportState:     true,
				ImportStateKind: tfresource.ImportBlockWithResourceIdentity,
			},
			{
				ResourceName:    "sandboxer_snapshot.s",
				Config:          config,
				ImportState:     true,
				ImportStateKind: tfresource.ImportBlockWithResourceIdentity,
			},
		},
	})
}
