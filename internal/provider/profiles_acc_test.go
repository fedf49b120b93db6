package provider

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// providerWith returns the test provider block with extra arguments.
func (h accHost) providerWith(t *testing.T, extra string) string {
	t.Helper()
	base := h.providerConfig(t)
	return regexp.MustCompile(`provider "sandboxer" \{\n`).ReplaceAllString(base, "provider \"sandboxer\" {\n"+extra+"\n")
}

func TestAccProfile_builtins(t *testing.T) {
	testAccPreCheck(t)
	h := newAccHost(t)
	want := map[string]string{
		"profile.compose-e2e": "ext.compose-ssh", "profile.compose-checkpoint": "ext.compose-ssh",
		"profile.sandbox-canary": "ext.compose-ssh", "profile.vm-haskell-build": "ext.vm-packer",
		"profile.saas-stub": "ext.saas-stub", "profile.burst-sandbox": "ext.saas-stub", "profile.workspace": "ext.vm-packer",
	}
	config := h.providerConfig(t)
	var checks []statecheck.StateCheck
	i := 0
	for name, ext := range want {
		addr := fmt.Sprintf("data.sandboxer_profile.p%d", i)
		config += fmt.Sprintf("data \"sandboxer_profile\" \"p%d\" {\n  name = %q\n}\n", i, name)
		checks = append(checks,
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("extension"), knownvalue.StringExact(ext)),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("source"), knownvalue.StringExact("built-in")),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("version"), knownvalue.NotNull()))
		i++
	}
	config += `
data "sandboxer_profile" "burst" {
  name = "profile.burst-sandbox"
}
data "sandboxer_profile" "e2e" {
  name = "profile.compose-e2e"
}
`
	checks = append(checks,
		statecheck.ExpectKnownValue("data.sandboxer_profile.burst", tfjsonpath.New("extension_kind"), knownvalue.StringExact("metered")),
		statecheck.ExpectKnownValue("data.sandboxer_profile.burst", tfjsonpath.New("fallback"), knownvalue.StringExact("ext.compose-ssh")),
		statecheck.ExpectKnownValue("data.sandboxer_profile.burst", tfjsonpath.New("supports_snapshots"), knownvalue.Bool(false)),
		statecheck.ExpectKnownValue("data.sandboxer_profile.burst", tfjsonpath.New("hourly_price_usd"), knownvalue.Float64Exact(0.5)),
		statecheck.ExpectKnownValue("data.sandboxer_profile.e2e", tfjsonpath.New("supports_snapshots"), knownvalue.Bool(true)),
		statecheck.ExpectKnownValue("data.sandboxer_profile.e2e", tfjsonpath.New("required_inputs"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("repo")})),
	)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{Config: config, ConfigStateChecks: checks},
			{
				Config:      config + "data \"sandboxer_profile\" \"nope\" {\n  name = \"profile.nope\"\n}\n",
				ExpectError: wrapped(`Unknown Profile`),
			},
		},
	})
}

// A user profile file: an override visible in the data source, a new
// ext.vm-packer profile attached over SSH whose teardown leaves the
// machine's other files alone, and a broken file failing the plan.
func TestAccProfile_userFilesAndVMAttach(t *testing.T) {
	testAccPreCheck(t)
	h := newAccHost(t)
	dir := t.TempDir()
	base := t.TempDir() // stands in for /build on the VM
	if err := os.WriteFile(filepath.Join(base, "toolchain.txt"), []byte("ghc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(dir, "profile.vm-test.yaml"), []byte(fmt.Sprintf(`name: profile.vm-test
version: "2.1.0"
description: test VM build workspace
extension: ext.vm-packer
placement: [harness]
ttl: 45m
settings:
  workspace_base: %s
`, base)), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "profile.workspace.yaml"), []byte("name: profile.workspace\nversion: \"9.9.9\"\nextension: ext.vm-packer\n"), 0o644))
	config := h.providerWith(t, fmt.Sprintf("  profiles_dir = %q", dir)) + `
data "sandboxer_profile" "ws" {
  name = "profile.workspace"
}
resource "sandboxer_sandbox" "build" {
  profile = "profile.vm-test"
}
`
	var ws string
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(s *terraform.State) error {
			if _, err := os.Stat(ws); err == nil {
				return fmt.Errorf("workspace %s remains", ws)
			}
			if err := fileIs(base, "toolchain.txt", "ghc\n"); err != nil {
				return fmt.Errorf("teardown touched the machine: %w", err)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					// placement chose the host at plan time
					plancheck.ExpectKnownValue("sandboxer_sandbox.build", tfjsonpath.New("host"), knownvalue.StringExact("harness")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.sandboxer_profile.ws", tfjsonpath.New("version"), knownvalue.StringExact("9.9.9")),
					statecheck.ExpectKnownValue("data.sandboxer_profile.ws", tfjsonpath.New("source"), knownvalue.StringExact(filepath.Join(dir, "profile.workspace.yaml"))),
					statecheck.ExpectKnownValue("sandboxer_sandbox.build", tfjsonpath.New("ttl"), knownvalue.StringExact("45m")),
					statecheck.ExpectKnownValue("sandboxer_sandbox.build", tfjsonpath.New("extension"), knownvalue.StringExact("ext.vm-packer")),
				},
				Check: func(s *terraform.State) error {
					ws = stateAttr(s, "sandboxer_sandbox.build", "workspace_dir")
					if filepath.Dir(ws) != base || filepath.Base(ws) != "sbx-"+stateAttr(s, "sandboxer_sandbox.build", "id") {
						return fmt.Errorf("workspace %s is not %s/sbx-<id>", ws, base)
					}
					return nil
				},
			},
			{
				PreConfig: func() {
					must(t, os.WriteFile(filepath.Join(dir, "profile.broken.yaml"), []byte("name: profile.broken\nextension: ext.vm-packer\nttl: forever\n"), 0o644))
				},
				Config:      config,
				ExpectError: wrapped(`Unable to Load Profiles[\s\S]*profile\.broken\.yaml[\s\S]*field ttl`),
			},
			{
				PreConfig: func() { must(t, os.Remove(filepath.Join(dir, "profile.broken.yaml"))) },
				Config:    config,
			},
		},
	})
}

func writeCredits(t *testing.T, balance float64) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "credits.json")
	if err := os.WriteFile(p, []byte(fmt.Sprintf(`{"balance_usd": %v}`, balance)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

type ledgerFile struct {
	BalanceUSD   float64            `json:"balance_usd"`
	Holds        map[string]float64 `json:"holds"`
	Transactions []struct {
		Kind      string  `json:"kind"`
		SandboxID string  `json:"sandbox_id"`
		AmountUSD float64 `json:"amount_usd"`
	} `json:"transactions"`
}

func readLedger(t *testing.T, path string) ledgerFile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var l ledgerFile
	if err := json.Unmarshal(data, &l); err != nil {
		t.Fatal(err)
	}
	return l
}

func TestAccMetered_saasStub(t *testing.T) {
	testAccPreCheck(t)
	h := newAccHost(t)
	credits := writeCredits(t, 10)
	config := func(ttl string) string {
		return h.providerWith(t, fmt.Sprintf("  credits_file = %q", credits)) + fmt.Sprintf(`
resource "sandboxer_sandbox" "saas" {
  profile = "profile.saas-stub"
  ttl     = %q
}
`, ttl)
	}
	var id string
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(*terraform.State) error {
			l := readLedger(t, credits)
			if len(l.Holds) != 0 {
				return fmt.Errorf("holds remain after destroy: %v", l.Holds)
			}
			last := l.Transactions[len(l.Transactions)-1]
			// 10 - 2.00 (the vanished sandbox's 4h quote) - seconds of the last one
			if last.Kind != "debit" || last.SandboxID != id || l.BalanceUSD >= 8 || l.BalanceUSD < 7.99 {
				return fmt.Errorf("destroy did not debit the measured lifetime: balance %v, last %+v", l.BalanceUSD, last)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				// 1000h at 0.50/h = 500 USD: refused at plan time.
				Config:      config("1000h"),
				PlanOnly:    true,
				ExpectError: wrapped(`Unable to Place Sandbox[\s\S]*credits are short: 10.00 USD available, 500.00 USD quoted`),
			},
			{
				Config: config("3h"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue("sandboxer_sandbox.saas", tfjsonpath.New("estimated_cost_usd"), knownvalue.Float64Exact(1.5)),
					plancheck.ExpectKnownValue("sandboxer_sandbox.saas", tfjsonpath.New("extension"), knownvalue.StringExact("ext.saas-stub")),
					plancheck.ExpectKnownValue("sandboxer_sandbox.saas", tfjsonpath.New("host"), knownvalue.StringExact("local")),
				}},
				Check: func(s *terraform.State) error {
					id = stateAttr(s, "sandboxer_sandbox.saas", "id")
					if l := readLedger(t, credits); l.Holds[id] != 1.5 {
						return fmt.Errorf("no hold of the quote while the sandbox lives: %+v", l.Holds)
					}
					return nil
				},
			},
			{
				// A ttl change moves the expiry in place and re-quotes: the hold follows.
				Config: config("4h"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("sandboxer_sandbox.saas", plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue("sandboxer_sandbox.saas", tfjsonpath.New("estimated_cost_usd"), knownvalue.Float64Exact(2)),
				}},
				Check: func(*terraform.State) error {
					if l := readLedger(t, credits); l.Holds[id] != 2 {
						return fmt.Errorf("hold after the ttl change: %+v", l.Holds)
					}
					return nil
				},
			},
			{
				// A re-quote the credits cannot hold (30h = 15 USD of 10)
				// fails, and the host record is put back as it was: the
				// hold never leads the record, nor the record the hold.
				Config:      config("30h"),
				ExpectError: wrapped(`Unable to Update Sandbox[\s\S]*the new quote of 15.00 USD[\s\S]*insufficient credits`),
				Check:       func(*terraform.State) error { return nil },
			},
			{
				Config:   config("4h"),
				PlanOnly: true,
				PreConfig: func() {
					raw, err := os.ReadFile(filepath.Join(h.localDir, ".sandboxer", "sandboxes", id+".json"))
					var rec backends.Sandbox
					if err == nil {
						err = json.Unmarshal(raw, &rec)
					}
					if err != nil || rec.TTL != "4h" || rec.QuoteUSD != 2 {
						t.Fatalf("the record after the refused update: %s %v", raw, err)
					}
					if l := readLedger(t, credits); l.Holds[id] != 2 {
						t.Fatalf("hold after the refused update: %+v", l.Holds)
					}
				},
			},
			{
				// Gone without a destroy (as when reaped): the next refresh
				// debits its quote (2.00 for 4h) and the plan re-creates it.
				PreConfig: func() {
					must(t, os.Remove(filepath.Join(h.localDir, ".sandboxer", "sandboxes", id+".json")))
					must(t, os.RemoveAll(filepath.Join(h.localDir, "sbx-"+id)))
				},
				Config: config("4h"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("sandboxer_sandbox.saas", plancheck.ResourceActionCreate),
				}},
				Check: func(s *terraform.State) error {
					l := readLedger(t, credits)
					if l.BalanceUSD != 8 {
						return fmt.Errorf("balance %v after the vanished sandbox was settled, want 8", l.BalanceUSD)
					}
					id = stateAttr(s, "sandboxer_sandbox.saas", "id")
					return nil
				},
			},
		},
	})
}

// A profile's snapshots.quiesce is the default of its snapshots, also when
// the sandbox is created in the same apply.
func TestAccCheckpoint_profileQuiesceDefault(t *testing.T) {
	testAccPreCheck(t)
	testharness.RequireDocker(t)
	h := newAccHost(t)
	repo := testharness.ComposeRepo(t, testharness.Image(t), "app")
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             h.checkNothingLeft(t),
		Steps: []resource.TestStep{{
			Config: h.providerConfig(t) + fmt.Sprintf(`
resource "sandboxer_sandbox" "cp" {
  profile = "profile.compose-checkpoint"
  host    = "harness"
  inputs  = { repo = %q }
}
resource "sandboxer_snapshot" "s" {
  sandbox_id = sandboxer_sandbox.cp.id
  name       = "consistent"
}
`, repo),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("sandboxer_snapshot.s", tfjsonpath.New("quiesce"), knownvalue.StringExact("pause")),
				statecheck.ExpectKnownValue("sandboxer_sandbox.cp", tfjsonpath.New("status"), knownvalue.StringExact("ready")),
			},
		}},
	})
}

func TestAccMetered_burstFallsBackToCompose(t *testing.T) {
	testAccPreCheck(t)
	testharness.RequireDocker(t)
	h := newAccHost(t)
	credits := writeCredits(t, 0.1) // a 1h quote is 0.50
	repo := testharness.ComposeRepo(t, testharness.Image(t), "app")
	config := h.providerWith(t, fmt.Sprintf("  credits_file = %q", credits)) + fmt.Sprintf(`
resource "sandboxer_sandbox" "burst" {
  profile = "profile.burst-sandbox"
  inputs  = { repo = %q }
}
`, repo)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             h.checkNothingLeft(t),
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue("sandboxer_sandbox.burst", tfjsonpath.New("extension"), knownvalue.StringExact("ext.compose-ssh")),
					plancheck.ExpectKnownValue("sandboxer_sandbox.burst", tfjsonpath.New("host"), knownvalue.StringExact("local")),
					plancheck.ExpectKnownValue("sandboxer_sandbox.burst", tfjsonpath.New("estimated_cost_usd"), knownvalue.Null()),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("sandboxer_sandbox.burst", tfjsonpath.New("status"), knownvalue.StringExact("ready")),
				},
				Check: func(*terraform.State) error {
					if l := readLedger(t, credits); l.BalanceUSD != 0.1 || len(l.Transactions) != 0 {
						return fmt.Errorf("the fallback touched the ledger: %+v", l)
					}
					return nil
				},
			},
		},
	})
}
