package provider

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
)

// Schema versions. A release that changes a resource's schema gives it the
// next version, and the resource's UpgradeState takes a state of every
// earlier version to the current one: a state written by an older release
// reads, and plans, as this release would have written it, with or
// without a refresh first. scripts/test-upgrade.sh applies with the
// newest release in scripts/upgrade/releases (or each) and plans with
// this build (docs/design.md, "Upgrades").
//
//	0  0.2.0 and before
//	1  0.3.0: sandboxer_sandbox gains published_ports (default "free"),
//	   wait_for_ports, endpoints and services[*].ports, desired_state,
//	   on_expiry and timings; sandboxer_restore gains endpoints
const (
	sandboxSchemaVersion = 1
	restoreSchemaVersion = 1
)

// stateStep takes a state's attributes, as its JSON has them, from one
// schema version to the next.
type stateStep func(attrs map[string]json.RawMessage) error

// jsonStateUpgrader upgrades the states of one schema version: it runs the
// steps from that version to the current one, in order, on the state's
// JSON, where an attribute a release removed or renamed is still there to
// read (a prior schema's decoding would drop it). No old schema is kept:
// a step names the attributes it changes. An attribute the JSON lacks
// (one added since) decodes as null. The result must decode with the
// current schema exactly, so a step that forgets an attribute removed
// since fails the upgrade instead of losing it.
func jsonStateUpgrader(steps ...stateStep) resource.StateUpgrader {
	return resource.StateUpgrader{StateUpgrader: func(_ context.Context, req resource.UpgradeStateRequest, resp *resource.UpgradeStateResponse) {
		fail := func(err error) {
			resp.Diagnostics.AddError("Unable to Upgrade Resource State", err.Error())
		}
		if req.RawState == nil || req.RawState.JSON == nil {
			fail(fmt.Errorf("the prior state is not JSON: it was written by a Terraform CLI older than 0.12"))
			return
		}
		var attrs map[string]json.RawMessage
		if err := json.Unmarshal(req.RawState.JSON, &attrs); err != nil {
			fail(fmt.Errorf("reading the prior state: %w", err))
			return
		}
		for _, step := range steps {
			if err := step(attrs); err != nil {
				fail(err)
				return
			}
		}
		out, err := json.Marshal(attrs)
		if err != nil {
			fail(err)
			return
		}
		resp.DynamicValue = &tfprotov6.DynamicValue{JSON: out}
	}}
}

// jsonNull: an attribute the JSON lacks or holds as null.
func jsonNull(v json.RawMessage, ok bool) bool { return !ok || string(v) == "null" }

// sandboxV0ToV1 takes a sandboxer_sandbox state of 0.2.0 to version 1.
//
// published_ports (new, default "free", a change replaces the sandbox) is
// "free": what the configuration that created the sandbox plans, since it
// could not set the attribute. The sandbox itself runs its compose file as
// written (0.2.0 did not render it, and its host record has no
// published_ports), which "as_written" would say more truly; but that, or
// null, would plan the replacement of every sandbox on upgrade, in a plan
// with -refresh=false too. A sandbox keeps running as it was created until
// it is replaced for another reason, and is then created rendered. (Read
// says the same for a state without the attribute: fromBackend.) A
// version-0 state written by a build between 0.2.0 and this version that
// has the attribute keeps it.
//
// wait_for_ports (new, default false) is false, as the configuration
// plans it and as the sandbox was created (0.2.0 never waited for ports);
// endpoints and services[*].ports (computed) are null until the next
// refresh reads them from the host. desired_state is "running" and
// on_expiry "destroy", as the configuration plans them and as 0.2.0 ran
// every sandbox; policy is "trusted", which 0.2.0 created every sandbox
// under (a host block now stricter replaces them); timings (computed) stay
// null.
func sandboxV0ToV1(attrs map[string]json.RawMessage) error {
	for name, value := range map[string]string{
		"published_ports": `"` + backends.PortsFree + `"`,
		"wait_for_ports":  `false`,
		"desired_state":   `"` + backends.DesiredRunning + `"`,
		"on_expiry":       `"` + backends.ExpiryDestroy + `"`,
		"policy":          `"` + string(backends.PolicyTrusted) + `"`,
	} {
		if v, ok := attrs[name]; jsonNull(v, ok) {
			attrs[name] = json.RawMessage(value)
		}
	}
	return nil
}

// restoreV0ToV1 takes a sandboxer_restore state of 0.2.0 to version 1:
// endpoints (new, computed) is null until the next refresh reads it from
// the host. Nothing to change, but the version says which schema a state
// was written with.
func restoreV0ToV1(map[string]json.RawMessage) error { return nil }

var (
	_ resource.ResourceWithUpgradeState = &SandboxResource{}
	_ resource.ResourceWithUpgradeState = &RestoreResource{}
)

// UpgradeState: one upgrader per earlier schema version, each running the
// steps from its version to the current one.
func (r *SandboxResource) UpgradeState(context.Context) map[int64]resource.StateUpgrader {
	return map[int64]resource.StateUpgrader{
		0: jsonStateUpgrader(sandboxV0ToV1),
	}
}

// UpgradeState: as SandboxResource's.
func (r *RestoreResource) UpgradeState(context.Context) map[int64]resource.StateUpgrader {
	return map[int64]resource.StateUpgrader{
		0: jsonStateUpgrader(restoreV0ToV1),
	}
}
