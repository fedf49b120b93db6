package provider

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
)

// A sandbox's policy (ADR 0006) is its host's, tightened by its own
// `policy` argument, and stays what the sandbox was created under: a
// change of either replaces the sandbox, so a stack always runs as its
// policy checked and rendered it.

// planPolicy decides the plan's policy and the rules the compose file is
// checked by. false: the sandbox asks for less than its host's floor.
func (p *sandboxPlan) planPolicy() (backends.Rules, bool) {
	config := p.configPolicy
	return p.decidePolicy(config)
}

func (p *sandboxPlan) decidePolicy(config types.String) (backends.Rules, bool) {
	rules, known := p.hostRules()
	if config.IsUnknown() {
		p.plan.Policy = types.StringUnknown()
		return rules, true
	}
	own := backends.Level(config.ValueString())
	if !known {
		// The host is unknown and in no pool: planned as asked, the
		// create checks again on the host it gets.
		rules.Policy.Level = own.Stricter(rules.Policy.Level)
		p.plan.Policy = types.StringValue(string(rules.Policy.Level))
		return rules, true
	}
	floor := rules.Policy.Level
	if !config.IsNull() && !own.AtLeast(floor) {
		p.resp.Diagnostics.AddAttributeError(path.Root("policy"), "Policy Looser Than the Host's",
			fmt.Sprintf("policy %q is looser than host %q's %q: a sandbox may tighten its host's policy, never loosen it. "+
				"Remove policy, or set %q or stricter.", own, p.plan.Host.ValueString(), floor, floor))
		return rules, false
	}
	rules.Policy.Level = floor.Stricter(own)
	p.plan.Policy = types.StringValue(string(rules.Policy.Level))
	if p.state != nil && !p.state.Policy.IsNull() && !p.state.Policy.Equal(p.plan.Policy) {
		p.resp.RequiresReplace = append(p.resp.RequiresReplace, path.Root("policy"))
	}
	return rules, true
}

// hostRules are the rules of the host the sandbox is planned on, or of its
// pool when the pool picks the host at create (every host of a pool has
// the same: checkPoolRules). false: neither is known.
func (p *sandboxPlan) hostRules() (backends.Rules, bool) {
	if host := p.plan.Host; !host.IsUnknown() && !host.IsNull() {
		return p.data.hostRules(host.ValueString()), true
	}
	if _, pool := catalog.Place(p.profile, p.data.placementRequest(p.configHost, p.plan.HostPool)); pool != "" {
		return p.data.poolRules(pool)
	}
	return backends.Rules{Policy: backends.Policy{Level: backends.PolicyTrusted}}, false
}

// createRules are the rules a sandbox is created by on host: the host's,
// at the level the plan decided (known by apply: it is decided from the
// configuration and the host's, or its pool's, rules).
func (d *providerData) createRules(host string, planned types.String) (backends.Rules, error) {
	rules := d.hostRules(host)
	level := backends.Level(planned.ValueString()).Stricter(rules.Policy.Level)
	if !planned.IsNull() && !planned.IsUnknown() && level != backends.Level(planned.ValueString()) {
		return rules, fmt.Errorf("the plan's policy %q is looser than host %q's %q", planned.ValueString(), host, rules.Policy.Level)
	}
	rules.Policy.Level = level
	return rules, nil
}
