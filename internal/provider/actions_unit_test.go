package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	actionschema "github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// The sandboxer_snapshot action's paths and metadata are refused by the
// plan, before any host is contacted (the local host's root stays empty):
// on a CLI with actions (Terraform >= 1.14), older ones skip it.
func TestUnitActions_snapshotRefusedAtPlan(t *testing.T) {
	requireCLI(t)
	root := t.TempDir()
	base := fmt.Sprintf(`
provider "sandboxer" {
  host {
    name     = "build"
    local    = true
    root_dir = %q
  }
}

resource "terraform_data" "go" {
  input = "x"
  lifecycle {
    action_trigger {
      events  = [after_create]
      actions = [action.sandboxer_snapshot.bad]
    }
  }
}
`, root)
	action := func(args string) string {
		return base + `
action "sandboxer_snapshot" "bad" {
  config {
    sandbox_id = "3f9c2a7b1d0e"
    host       = "build"
    name       = "bad"
` + args + `
  }
}
`
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		TerraformVersionChecks:   natives,
		Steps: []resource.TestStep{{
			Config:      action(`include_paths = ["../etc"]`),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`Invalid Snapshot Paths`),
		}, {
			Config:      action(fmt.Sprintf(`metadata = { big = %q }`, strings.Repeat("x", maxMetadataBytes+1))),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`Snapshot Metadata Too Large`),
		}},
	})
	rootStaysEmpty(t, root)
}

// The rules the resource and the action share.
func TestValidateSnapshotArgs(t *testing.T) {
	ctx := context.Background()
	list := func(v ...string) types.List { l, _ := types.ListValueFrom(ctx, types.StringType, v); return l }
	meta := func(n int) types.Map {
		m, _ := types.MapValueFrom(ctx, types.StringType, map[string]string{"k": strings.Repeat("x", n)})
		return m
	}
	for _, c := range []struct {
		name             string
		include, exclude types.List
		metadata         types.Map
		want             string
	}{
		{"fine", list("src/**"), list("**/*.log"), meta(10), ""},
		{"unset", types.ListNull(types.StringType), types.ListNull(types.StringType), types.MapNull(types.StringType), ""},
		{"unknown", types.ListUnknown(types.StringType), list(), types.MapUnknown(types.StringType), ""},
		{"escaping include", list("../etc"), list(), meta(1), "Invalid Snapshot Paths"},
		{"absolute exclude", list(), list("/etc"), meta(1), "Invalid Snapshot Paths"},
		{"metadata at the limit", list(), list(), meta(maxMetadataBytes - 1), ""},
		{"metadata over it", list(), list(), meta(maxMetadataBytes), "Snapshot Metadata Too Large"},
	} {
		var d diag.Diagnostics
		validateSnapshotArgs(ctx, c.include, c.exclude, c.metadata, &d)
		got := ""
		if d.HasError() {
			got = d.Errors()[0].Summary()
		}
		if got != c.want {
			t.Errorf("%s: %q, want %q (%v)", c.name, got, c.want, d)
		}
	}
}

// An action takes a resource's arguments with their descriptions and
// validators; what only state has (computed, defaults) is dropped, and
// an argument is required where the resource or the action requires it.
func TestActionAttributes(t *testing.T) {
	res := restoreInPlaceAttributes()
	got := actionAttributes(res, "target_sandbox_id")
	if len(got) != len(res) {
		t.Fatalf("%d action attributes for %d arguments", len(got), len(res))
	}
	for name, want := range map[string]bool{"snapshot_id": true, "target_sandbox_id": true, "host": false, "prune": false} {
		a := got[name]
		if a.IsRequired() != want || a.IsOptional() == want || a.IsComputed() {
			t.Errorf("%s: required %v optional %v computed %v, want required %v", name, a.IsRequired(), a.IsOptional(), a.IsComputed(), want)
		}
		if a.GetMarkdownDescription() != res[name].GetMarkdownDescription() {
			t.Errorf("%s: description %q, the resource's is %q", name, a.GetMarkdownDescription(), res[name].GetMarkdownDescription())
		}
	}
	if id, ok := got["snapshot_id"].(actionschema.StringAttribute); !ok || len(id.Validators) != 1 {
		t.Errorf("snapshot_id: %#v, want a string with the resource's id check", got["snapshot_id"])
	}
}
