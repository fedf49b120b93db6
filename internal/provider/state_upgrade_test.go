package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// States as 0.2.0 wrote them (terraform.tfstate of scripts/test-upgrade.sh's
// configuration, schema version 0): a compose sandbox, a workspace sandbox
// and a restore into a new sandbox.
const (
	v020ComposeSandbox = `{"compose_project":"sbx-c2dee6f076b3","created_at":"2026-11-26T04:00:04Z","env":null,"env_wo":null,` +
		`"env_wo_version":null,"estimated_cost_usd":null,"expires_at":"2026-11-26T06:00:04Z","extension":"ext.compose-ssh",` +
		`"host":"harness","host_labels":null,"host_pool":null,"id":"c2dee6f076b3","inputs":{"repo":"/work/app"},` +
		`"labels":{"test":"upgrade"},"profile":"profile.compose-e2e","ready_at":"2026-11-26T04:00:05Z",` +
		`"services":[{"name":"web","state":"running"},{"name":"worker","state":"running"}],` +
		`"source_hash":"sha256:6fa2440fbff5912c46839088845e2f1a178ac7e8821c415555c63b7d48468feb","status":"ready",` +
		`"timeouts":null,"ttl":"2h","workspace_dir":"/srv/sandboxer/c2dee6f076b3"}`
	v020WorkspaceSandbox = `{"compose_project":null,"created_at":"2026-11-26T04:00:04Z","env":null,"env_wo":null,"env_wo_version":null,` +
		`"estimated_cost_usd":null,"expires_at":"2026-11-26T05:30:04Z","extension":"ext.vm-packer","host":"local","host_labels":null,` +
		`"host_pool":null,"id":"f907fbef4d90","inputs":null,"labels":null,"profile":"profile.workspace","ready_at":"2026-11-26T04:00:04Z",` +
		`"services":[],"source_hash":null,"status":"ready","timeouts":null,"ttl":"90m","workspace_dir":"/home/u/.local/share/sandboxer/sbx-f907fbef4d90"}`
	v020Restore = `{"files_restored":1,"host":"harness","id":"31dc580c9b0e","inputs":{"repo":"/work/copy"},"overwrite":true,` +
		`"profile":null,"prune":false,"restore_env":true,"restore_files":true,"restored_at":"2026-11-26T04:00:06Z",` +
		`"sandbox_id":"31dc580c9b0e","snapshot_id":"snap-1b7d2815dd48","target_sandbox_id":null,"timeouts":null,` +
		`"triggers":null,"workspace_dir":"/srv/sandboxer/31dc580c9b0e"}`
)

// upgradeState runs the provider's UpgradeResourceState, as Terraform does
// when it reads a state whose schema version is not the resource's, and
// returns the upgraded attributes and, as the current schema reads the
// prior JSON as it is, the attributes it started from.
func upgradeState(t *testing.T, typeName string, version int64, raw string) (upgraded, prior map[string]tftypes.Value) {
	t.Helper()
	ctx := context.Background()
	server, err := providerserver.NewProtocol6WithError(New("test")())()
	if err != nil {
		t.Fatal(err)
	}
	schemas, err := server.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	s, ok := schemas.ResourceSchemas[typeName]
	if !ok {
		t.Fatalf("no schema for %s", typeName)
	}
	typ := s.ValueType()
	resp, err := server.UpgradeResourceState(ctx, &tfprotov6.UpgradeResourceStateRequest{
		TypeName: typeName, Version: version, RawState: &tfprotov6.RawState{JSON: []byte(raw)},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range resp.Diagnostics {
		t.Errorf("%s: %s", d.Summary, d.Detail)
	}
	if t.Failed() {
		t.FailNow()
	}
	value, err := resp.UpgradedState.Unmarshal(typ)
	if err != nil {
		t.Fatal(err)
	}
	if err := value.As(&upgraded); err != nil {
		t.Fatal(err)
	}
	before, err := (&tfprotov6.RawState{JSON: []byte(raw)}).Unmarshal(typ)
	if err != nil {
		t.Fatal(err)
	}
	if err := before.As(&prior); err != nil {
		t.Fatal(err)
	}
	return upgraded, prior
}

// keptBut fails the test for each attribute that differs between upgraded
// and prior, except those named.
func keptBut(t *testing.T, upgraded, prior map[string]tftypes.Value, changed ...string) {
	t.Helper()
	skip := map[string]bool{}
	for _, k := range changed {
		skip[k] = true
	}
	for k, v := range prior {
		if !skip[k] && !v.Equal(upgraded[k]) {
			t.Errorf("%s: %v became %v", k, v, upgraded[k])
		}
	}
}

func stringOf(t *testing.T, v tftypes.Value) string {
	t.Helper()
	var s string
	if err := v.As(&s); err != nil {
		t.Fatalf("%v: %v", v, err)
	}
	return s
}

// The schemas say version 1, which the upgrade test's states are not.
func TestSchemaVersions(t *testing.T) {
	server, err := providerserver.NewProtocol6WithError(New("test")())()
	if err != nil {
		t.Fatal(err)
	}
	schemas, err := server.GetProviderSchema(context.Background(), &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int64{"sandboxer_sandbox": sandboxSchemaVersion, "sandboxer_restore": restoreSchemaVersion, "sandboxer_snapshot": 0} {
		if got := schemas.ResourceSchemas[name].Version; got != want {
			t.Errorf("%s: schema version %d, want %d", name, got, want)
		}
	}
}

// A 0.2.0 sandbox's state gets published_ports "free", desired_state
// "running", on_expiry "destroy" and policy "trusted", what a configuration
// without them
// plans (anything else would replace or change the sandbox); the
// attributes it did not have are null until a refresh, and every other one
// is kept.
func TestUpgradeSandboxStateFrom020(t *testing.T) {
	for name, raw := range map[string]string{"compose": v020ComposeSandbox, "workspace": v020WorkspaceSandbox} {
		t.Run(name, func(t *testing.T) {
			upgraded, prior := upgradeState(t, "sandboxer_sandbox", 0, raw)
			keptBut(t, upgraded, prior, "published_ports", "wait_for_ports", "desired_state", "on_expiry", "policy")
			if got := stringOf(t, upgraded["published_ports"]); got != "free" {
				t.Errorf("published_ports = %q, want free", got)
			}
			// What 0.2.0 did, and what a configuration without them plans.
			if got := stringOf(t, upgraded["desired_state"]) + " " + stringOf(t, upgraded["on_expiry"]); got != "running destroy" {
				t.Errorf("desired_state and on_expiry = %q, want running destroy", got)
			}
			if got := stringOf(t, upgraded["policy"]); got != "trusted" {
				t.Errorf("policy = %q, want trusted, what 0.2.0 created every sandbox under", got)
			}
			var wait bool
			if err := upgraded["wait_for_ports"].As(&wait); err != nil || wait {
				t.Errorf("wait_for_ports = %v, want false (its default)", upgraded["wait_for_ports"])
			}
			if !upgraded["endpoints"].IsNull() {
				t.Errorf("endpoints = %v, want null until a refresh", upgraded["endpoints"])
			}
			var services []tftypes.Value
			if err := upgraded["services"].As(&services); err != nil {
				t.Fatal(err)
			}
			for _, s := range services {
				var svc map[string]tftypes.Value
				if err := s.As(&svc); err != nil {
					t.Fatal(err)
				}
				if stringOf(t, svc["name"]) == "" || !svc["ports"].IsNull() {
					t.Errorf("service %v: want its name, and ports null until a refresh", svc)
				}
			}
			if name == "compose" && len(services) != 2 {
				t.Errorf("services: %v", services)
			}
		})
	}
}

// A version-0 state written after 0.2.0, by a build that had the new
// attributes before the version changed, keeps what it says.
func TestUpgradeSandboxStateKeepsNewAttributes(t *testing.T) {
	raw := v020ComposeSandbox[:len(v020ComposeSandbox)-1] +
		`,"published_ports":"as_written","wait_for_ports":true,"endpoints":{"web:80":"127.0.0.1:18081"}}`
	upgraded, prior := upgradeState(t, "sandboxer_sandbox", 0, raw)
	keptBut(t, upgraded, prior, "desired_state", "on_expiry", "policy") // not in this state: see above
	if got := stringOf(t, upgraded["published_ports"]); got != "as_written" {
		t.Errorf("published_ports = %q, want as_written", got)
	}
}

// A 0.2.0 restore's state is kept, endpoints null until a refresh.
func TestUpgradeRestoreStateFrom020(t *testing.T) {
	upgraded, prior := upgradeState(t, "sandboxer_restore", 0, v020Restore)
	keptBut(t, upgraded, prior)
	if !upgraded["endpoints"].IsNull() {
		t.Errorf("endpoints = %v, want null until a refresh", upgraded["endpoints"])
	}
}

// A state with an attribute the current schema does not have, which no
// step took care of, fails the upgrade rather than losing it.
func TestUpgradeStateRefusesUnknownAttributes(t *testing.T) {
	server, err := providerserver.NewProtocol6WithError(New("test")())()
	if err != nil {
		t.Fatal(err)
	}
	raw := v020Restore[:len(v020Restore)-1] + `,"dropped_since":"x"}`
	resp, err := server.UpgradeResourceState(context.Background(), &tfprotov6.UpgradeResourceStateRequest{
		TypeName: "sandboxer_restore", Version: 0, RawState: &tfprotov6.RawState{JSON: []byte(raw)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Diagnostics) == 0 || resp.Diagnostics[0].Severity != tfprotov6.DiagnosticSeverityError {
		t.Fatalf("an unknown attribute was accepted: %+v", resp.Diagnostics)
	}
}
