package provider

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/querycheck"
	"github.com/hashicorp/terraform-plugin-testing/querycheck/queryfilter"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// is is a known-value check comparing with *want when the check runs: the
// ids a query must return are only known once an earlier step created them.
func is(want *string) knownvalue.Check {
	return knownvalue.StringFunc(func(v string) error {
		if v != *want {
			return fmt.Errorf("got %q, want %q", v, *want)
		}
		return nil
	})
}

// `terraform query` of sandboxes and snapshots on the harness host, through
// plugin-testing's Query steps on Terraform >= 1.14: each filter (labels,
// profile, status, expired, host, snapshot name and sandbox), the limit,
// identities, display names and the resource an import would read.
func TestAccList_query(t *testing.T) {
	testAccPreCheck(t)
	h := newAccHost(t)
	var idA, idB, snapID string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		TerraformVersionChecks:   natives,
		CheckDestroy:             h.checkNothingLeft(t),
		Steps: []resource.TestStep{{
			Config: h.providerConfig(t) + `
resource "sandboxer_sandbox" "a" {
  profile = "profile.workspace"
  host    = "harness"
  labels  = { team = "a", pipeline = "nightly" }
}

resource "sandboxer_sandbox" "b" {
  profile = "profile.workspace"
  host    = "harness"
  labels  = { team = "b" }
}

resource "sandboxer_snapshot" "a" {
  sandbox_id = sandboxer_sandbox.a.id
  host       = "harness"
  name       = "before-upgrade"
}
`,
			Check: func(s *terraform.State) error {
				idA, idB = stateAttr(s, "sandboxer_sandbox.a", "id"), stateAttr(s, "sandboxer_sandbox.b", "id")
				snapID = stateAttr(s, "sandboxer_snapshot.a", "id")
				return nil
			},
		}, {
			Query: true,
			Config: `
list "sandboxer_sandbox" "team_a" {
  provider         = sandboxer
  include_resource = true
  config {
    host   = "harness"
    labels = { team = "a" }
  }
}

list "sandboxer_sandbox" "everywhere" {
  provider = sandboxer
  config {
    profile = "profile.workspace"
    status  = "ready"
  }
}

list "sandboxer_sandbox" "first" {
  provider = sandboxer
  limit    = 1
  config {
    host = "harness"
  }
}

list "sandboxer_sandbox" "expired" {
  provider = sandboxer
  config {
    host    = "harness"
    expired = true
  }
}

list "sandboxer_sandbox" "other_team" {
  provider = sandboxer
  config {
    host   = "harness"
    labels = { team = "a", pipeline = "weekly" }
  }
}

list "sandboxer_snapshot" "upgrades" {
  provider         = sandboxer
  include_resource = true
  config {
    host = "harness"
    name = "upgrade"
  }
}

list "sandboxer_snapshot" "of_another" {
  provider = sandboxer
  config {
    sandbox_id = "0123456789ab"
  }
}
`,
			QueryResultChecks: []querycheck.QueryResultCheck{
				querycheck.ExpectLength("sandboxer_sandbox.team_a", 1),
				querycheck.ExpectIdentity("sandboxer_sandbox.team_a", map[string]knownvalue.Check{
					"host": knownvalue.StringExact("harness"), "id": is(&idA)}),
				querycheck.ExpectResourceKnownValues("sandboxer_sandbox.team_a",
					queryfilter.ByResourceIdentity(map[string]knownvalue.Check{"host": knownvalue.StringExact("harness"), "id": is(&idA)}),
					[]querycheck.KnownValueCheck{
						{Path: tfjsonpath.New("profile"), KnownValue: knownvalue.StringExact("profile.workspace")},
						{Path: tfjsonpath.New("status"), KnownValue: knownvalue.StringExact("ready")},
						{Path: tfjsonpath.New("labels").AtMapKey("pipeline"), KnownValue: knownvalue.StringExact("nightly")},
						{Path: tfjsonpath.New("workspace_dir"), KnownValue: knownvalue.StringRegexp(regexp.MustCompile(regexp.QuoteMeta(h.rootDir)))},
						{Path: tfjsonpath.New("env"), KnownValue: knownvalue.Null()},
					}),
				querycheck.ExpectResourceDisplayName("sandboxer_sandbox.team_a",
					queryfilter.ByResourceIdentity(map[string]knownvalue.Check{"host": knownvalue.StringExact("harness"), "id": is(&idA)}),
					knownvalue.StringRegexp(regexp.MustCompile(`^[0-9a-f]+ \(profile\.workspace on harness, ready\)$`))),
				// Every host of the provider: both sandboxes, on harness.
				querycheck.ExpectLength("sandboxer_sandbox.everywhere", 2),
				querycheck.ExpectIdentity("sandboxer_sandbox.everywhere", map[string]knownvalue.Check{
					"host": knownvalue.StringExact("harness"), "id": is(&idB)}),
				querycheck.ExpectLength("sandboxer_sandbox.first", 1),
				querycheck.ExpectLength("sandboxer_sandbox.expired", 0),
				querycheck.ExpectLength("sandboxer_sandbox.other_team", 0),
				querycheck.ExpectLength("sandboxer_snapshot.upgrades", 1),
				querycheck.ExpectResourceKnownValues("sandboxer_snapshot.upgrades",
					queryfilter.ByResourceIdentity(map[string]knownvalue.Check{"host": knownvalue.StringExact("harness"), "id": is(&snapID)}),
					[]querycheck.KnownValueCheck{
						{Path: tfjsonpath.New("name"), KnownValue: knownvalue.StringExact("before-upgrade")},
						{Path: tfjsonpath.New("sandbox_id"), KnownValue: is(&idA)},
						{Path: tfjsonpath.New("file_count"), KnownValue: knownvalue.NotNull()},
					}),
				querycheck.ExpectLength("sandboxer_snapshot.of_another", 0),
			},
		}, {
			// A bad filter is refused before any host is read.
			Query: true,
			Config: `
list "sandboxer_sandbox" "bad" {
  provider = sandboxer
  config {
    host   = "nowhere"
  }
}
`,
			ExpectError: regexp.MustCompile(`host "nowhere" is not declared`),
		}},
	})
}

// `terraform query -generate-config-out` adopts what another configuration
// made, through the real CLI: the generated import blocks and resources
// import the sandbox and its snapshot, and the next plan is empty.
func TestAccList_generateConfig(t *testing.T) {
	testAccPreCheck(t)
	skipBelowNatives(t)
	tf := newDevCLI(t)
	h := newAccHost(t)
	provider := devCLIHeader + h.providerConfig(t)
	repo := t.TempDir()
	must(t, os.WriteFile(filepath.Join(repo, "app.txt"), []byte("v1\n"), 0o644))
	other := tf.dir(provider + fmt.Sprintf(`
resource "sandboxer_sandbox" "ci" {
  profile = "profile.workspace"
  host    = "harness"
  inputs  = { repo = %q }
  labels  = { owner = "pipeline-7" }
  ttl     = "3h"
}

resource "sandboxer_snapshot" "ci" {
  sandbox_id    = sandboxer_sandbox.ci.id
  host          = "harness"
  name          = "baseline"
  exclude_paths = ["*.log"]
  metadata      = { build = "41" }
}
`, repo))
	tf.run(other, "apply", "-auto-approve")
	// The pipeline's own state is dropped: its objects are adopted below.
	must(t, os.Remove(filepath.Join(other, "terraform.tfstate")))

	adopt := tf.dir(provider)
	must(t, os.WriteFile(filepath.Join(adopt, "adopt.tfquery.hcl"), []byte(`
list "sandboxer_sandbox" "pipeline" {
  provider         = sandboxer
  include_resource = true
  config {
    host   = "harness"
    labels = { owner = "pipeline-7" }
  }
}

list "sandboxer_snapshot" "pipeline" {
  provider         = sandboxer
  include_resource = true
  config {
    host = "harness"
  }
}
`), 0o600))
	t.Cleanup(func() {
		tf.run(adopt, "destroy", "-auto-approve")
		if left := h.leftovers(t); len(left) > 0 {
			t.Errorf("the adopted configuration's destroy left %v", left)
		}
	})
	tf.run(adopt, "query", "-generate-config-out=generated.tf")
	generated, err := os.ReadFile(filepath.Join(adopt, "generated.tf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"import {", `resource "sandboxer_sandbox"`, `resource "sandboxer_snapshot"`, `owner = "pipeline-7"`, `name`} {
		if !strings.Contains(string(generated), want) {
			t.Errorf("generated configuration lacks %q:\n%s", want, generated)
		}
	}
	plan := tf.run(adopt, "plan")
	if !strings.Contains(plan, "2 to import, 0 to add, 0 to change, 0 to destroy") {
		t.Fatalf("the plan of the generated configuration is not 2 imports alone:\n%s\n%s", plan, generated)
	}
	tf.run(adopt, "apply", "-auto-approve")
	if out, err := tf.try(adopt, "plan", "-detailed-exitcode"); err != nil {
		t.Fatalf("the plan after the import is not empty (%v):\n%s\n%s", err, out, generated)
	}
}

// skipBelowNatives skips a real-CLI test when TF_ACC_TERRAFORM_PATH is not
// a Terraform with actions and list resources (>= 1.14).
func skipBelowNatives(t *testing.T) {
	t.Helper()
	cli := testharness.Env(t, "TF_ACC_TERRAFORM_PATH")
	out, _ := exec.Command(cli, "version").Output() // no answer: skipped below
	if f := strings.Fields(string(out)); len(f) < 2 || f[0] != "Terraform" || !versionAtLeast(strings.TrimPrefix(f[1], "v"), 1, 14) {
		t.Skipf("needs Terraform >= 1.14; %s says %q", cli, strings.SplitN(string(out), "\n", 2)[0])
	}
}
