package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

func TestParseImportID(t *testing.T) {
	good := map[string][2]string{
		"local/3f9c2a7b1d0e":        {"local", "3f9c2a7b1d0e"},
		"build-1/snap-0a1b2c3d4e5f": {"build-1", "snap-0a1b2c3d4e5f"},
	}
	for raw, want := range good {
		host, id, err := parseImportID(raw, "ID")
		if err != nil || host != want[0] || id != want[1] {
			t.Errorf("parseImportID(%q) = %q, %q, %v", raw, host, id, err)
		}
	}
	for _, raw := range []string{
		"bar/../../etc", "bar/$(id)", "bar/x;y", "bar/`id`", "/abc", "bar/", "a/b/c", "abc", "",
		"bar/ABC", "bar/-x", "bar/" + strings.Repeat("a", 64), "ba r/abc", "bar\n/abc", "bar/abc\n",
	} {
		if host, id, err := parseImportID(raw, "ID"); err == nil {
			t.Errorf("parseImportID(%q) accepted host %q id %q", raw, host, id)
		} else if !strings.Contains(err.Error(), "HOST/ID") {
			t.Errorf("parseImportID(%q): %v does not name the expected form", raw, err)
		}
	}
}

func TestIDValidator(t *testing.T) {
	ctx := context.Background()
	v := idValidator("snapshot")
	check := func(val types.String) diag.Diagnostics {
		resp := &validator.StringResponse{}
		v.ValidateString(ctx, validator.StringRequest{Path: path.Root("snapshot_id"), ConfigValue: val}, resp)
		return resp.Diagnostics
	}
	for _, ok := range []types.String{types.StringNull(), types.StringUnknown(), types.StringValue("0"),
		types.StringValue("snap-0a1b2c3d4e5f"), types.StringValue("3f9c2a7b1d0e"), types.StringValue(strings.Repeat("a", 63))} {
		if d := check(ok); d.HasError() {
			t.Errorf("%s refused: %v", ok, d)
		}
	}
	for _, bad := range []string{"", "x; touch /tmp/p", "../etc", "a/b", "-x", "Snap", "snap_1", "snap 1", "snap\n",
		"$(id)", "`id`", "é", strings.Repeat("a", 64)} {
		d := check(types.StringValue(bad))
		if !d.HasError() {
			t.Errorf("%q accepted", bad)
			continue
		}
		if msg := d[0].Detail(); !strings.Contains(msg, "not a snapshot id") ||
			!strings.Contains(msg, "lowercase letters, digits and dashes, 1 to 63 characters, starting with a letter or digit") {
			t.Errorf("%q: diagnostic does not say what an id looks like: %s", bad, msg)
		}
	}
}

// Arguments naming a sandbox or a snapshot are checked against the id
// grammar at plan time, with no host involved: the provider declares only
// a local host whose root directory must stay empty.
func TestUnitIDArgumentsAtPlanTime(t *testing.T) {
	requireCLI(t)
	bad := `x; touch /tmp/p`
	cases := map[string]string{
		"snapshot sandbox_id": fmt.Sprintf(`resource "sandboxer_snapshot" "s" {
 name = "n"
 sandbox_id = %q
}`, bad),
		"snapshot source_snapshot_id": fmt.Sprintf(`resource "sandboxer_snapshot" "s" {
 name = "n"
 source_snapshot_id = %q
}`, bad),
		"restore snapshot_id":       fmt.Sprintf(`resource "sandboxer_restore" "r" { snapshot_id = %q }`, bad),
		"restore target_sandbox_id": fmt.Sprintf("resource \"sandboxer_restore\" \"r\" {\n snapshot_id = \"snap-1\"\n target_sandbox_id = %q\n}", bad),
		"snapshot_diff from":        fmt.Sprintf("data \"sandboxer_snapshot_diff\" \"d\" {\n from = %q\n to = \"snap-2\"\n}", bad),
		"snapshot_diff to":          fmt.Sprintf("data \"sandboxer_snapshot_diff\" \"d\" {\n from = \"snap-1\"\n to = %q\n}", bad),
		"snapshots sandbox_id":      fmt.Sprintf(`data "sandboxer_snapshots" "l" { sandbox_id = %q }`, bad),
	}
	for name, config := range cases {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProviders,
				Steps: []resource.TestStep{{
					Config: fmt.Sprintf(`
provider "sandboxer" {
  host {
    name     = "build"
    local    = true
    root_dir = %q
  }
}
`, root) + config,
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(`Invalid Id[\s\S]*is not a (sandbox|snapshot) id[\s\S]*lowercase letters`),
				}},
			})
			rootStaysEmpty(t, root)
		})
	}
}

// An import id that is not HOST/ID is refused before any host is asked,
// for both importable resources.
func TestUnitImportIDRefused(t *testing.T) {
	requireCLI(t)
	resources := map[string]string{
		"Sandbox": `resource "sandboxer_sandbox" "s" {
  profile = "profile.workspace"
  host    = "build"
}`,
		"Snapshot": `resource "sandboxer_snapshot" "s" {
  name       = "n"
  sandbox_id = "3f9c2a7b1d0e"
}`,
	}
	for kind, res := range resources {
		for _, raw := range []string{"build/../../etc", "build/$(id)", "build/x;y", "/abc", "build/", "a/b/c"} {
			t.Run(kind+" "+raw, func(t *testing.T) {
				root := t.TempDir()
				resource.UnitTest(t, resource.TestCase{
					ProtoV6ProviderFactories: testAccProviders,
					Steps: []resource.TestStep{{
						Config: fmt.Sprintf(`
provider "sandboxer" {
  host {
    name     = "build"
    local    = true
    root_dir = %q
  }
}
`, root) + res,
						ResourceName:  "sandboxer_" + strings.ToLower(kind) + ".s",
						ImportState:   true,
						ImportStateId: raw,
						ExpectError: regexp.MustCompile(`Unable to Import ` + kind + `[\s\S]*HOST/` +
							strings.ToUpper(kind) + `_ID`),
					}},
				})
				rootStaysEmpty(t, root)
			})
		}
	}
}
