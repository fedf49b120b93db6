package provider

import (
	"context"
	"fmt"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
)

// A host block's rules (ADR 0006): its policy, what it allows beside it,
// and the limits its sandboxes' services get. A sandbox's own `policy`
// tightens the host's (sandbox_policy.go).

// limitsModel is a host block's default_limits or max_limits.
type limitsModel struct {
	Memory types.String  `tfsdk:"memory"`
	CPUs   types.Float64 `tfsdk:"cpus"`
	Pids   types.Int64   `tfsdk:"pids"`
}

// hostRulesModel are the host block's rules attributes.
type hostRulesModel struct {
	Policy                  types.String `tfsdk:"policy"`
	AllowedRuntimes         types.List   `tfsdk:"allowed_runtimes"`
	AllowedExternalNetworks types.List   `tfsdk:"allowed_external_networks"`
	AllowedExternalVolumes  types.List   `tfsdk:"allowed_external_volumes"`
	DefaultLimits           *limitsModel `tfsdk:"default_limits"`
	MaxLimits               *limitsModel `tfsdk:"max_limits"`
}

func limitsAttribute(what string) schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{Optional: true, MarkdownDescription: what,
		Attributes: map[string]schema.Attribute{
			"memory": schema.StringAttribute{Optional: true, Validators: []validator.String{memorySize()},
				MarkdownDescription: "Memory, as compose writes it: `512m`, `2g`."},
			"cpus": schema.Float64Attribute{Optional: true, Validators: []validator.Float64{float64validator.AtLeast(0.01)},
				MarkdownDescription: "CPUs, e.g. `1.0` or `0.5`."},
			"pids": schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.AtLeast(1)},
				MarkdownDescription: "Processes (and threads) in one container."},
		}}
}

// addHostRulesAttributes adds the rules attributes to a host block's.
func addHostRulesAttributes(attrs map[string]schema.Attribute) {
	attrs["policy"] = schema.StringAttribute{Optional: true,
		Validators: []validator.String{stringvalidator.OneOf(backends.PolicyLevels...)},
		MarkdownDescription: "What compose files may ask of this host, after the Kubernetes Pod Security Standards: `trusted` " +
			"(default: everything, with warnings), `baseline` (no privileged containers, host namespaces, added capabilities, " +
			"devices, unconfined security profiles, unsafe sysctls, bind mounts or files outside the repo, external networks " +
			"or volumes it does not allow) or `restricted` (baseline, and a non-root user, every capability dropped, no new " +
			"privileges). The floor for every sandbox on the host: a sandbox's `policy` may only tighten it. `baseline` is " +
			"the one for hosts that run compose files from pull requests. See the guide \"Running untrusted compose files\"."}
	attrs["allowed_runtimes"] = schema.ListAttribute{Optional: true, ElementType: types.StringType,
		MarkdownDescription: "Container runtimes compose files may name in `runtime` under `baseline` and `restricted`, besides " +
			"the engine's default `runc`, e.g. `[\"runsc\"]`."}
	attrs["allowed_external_networks"] = schema.ListAttribute{Optional: true, ElementType: types.StringType,
		MarkdownDescription: "External networks compose files may join under `baseline` and `restricted`, by name."}
	attrs["allowed_external_volumes"] = schema.ListAttribute{Optional: true, ElementType: types.StringType,
		MarkdownDescription: "External volumes compose files may mount under `baseline` and `restricted`, by name."}
	attrs["default_limits"] = limitsAttribute("Limits each service of a compose sandbox gets when it sets none of its own " +
		"(`mem_limit` or `deploy.resources.limits.memory`, `cpus`, `pids_limit`), e.g. `{ memory = \"2g\", cpus = 1.0, pids = 512 }`. " +
		"The rendered compose file carries them as `mem_limit`, `cpus` and `pids_limit` (compose v2 and v1), or under " +
		"`deploy.resources.limits` (swarm). A sandbox is created with the limits of its day; a change applies to sandboxes " +
		"created after it.")
	attrs["max_limits"] = limitsAttribute("Highest limits a service may set itself; a compose file asking more is refused at " +
		"plan time. A service that sets no limit gets `default_limits`, else these.")
}

// readHostRules reads a host block's rules; the error names the attribute.
func readHostRules(ctx context.Context, m hostRulesModel, diags *diag.Diagnostics) (backends.Rules, error) {
	r := backends.Rules{Policy: backends.Policy{
		Level:            backends.Level(stringOr(m.Policy, string(backends.PolicyTrusted))),
		Runtimes:         stringList(ctx, m.AllowedRuntimes, diags),
		ExternalNetworks: stringList(ctx, m.AllowedExternalNetworks, diags),
		ExternalVolumes:  stringList(ctx, m.AllowedExternalVolumes, diags),
	}}
	var err error
	if r.Default, err = readLimits(m.DefaultLimits, "default_limits"); err != nil {
		return r, err
	}
	if r.Max, err = readLimits(m.MaxLimits, "max_limits"); err != nil {
		return r, err
	}
	d, mx := r.Default, r.Max
	switch {
	case mx.Memory > 0 && d.Memory > mx.Memory:
		return r, &attrError{"default_limits", fmt.Errorf("default_limits.memory is above max_limits.memory")}
	case mx.CPUs > 0 && d.CPUs > mx.CPUs:
		return r, &attrError{"default_limits", fmt.Errorf("default_limits.cpus is above max_limits.cpus")}
	case mx.Pids > 0 && d.Pids > mx.Pids:
		return r, &attrError{"default_limits", fmt.Errorf("default_limits.pids is above max_limits.pids")}
	}
	return r, nil
}

func readLimits(m *limitsModel, attr string) (backends.Limits, error) {
	if m == nil {
		return backends.Limits{}, nil
	}
	mem, err := backends.ParseMemory(m.Memory.ValueString())
	if err != nil {
		return backends.Limits{}, &attrError{attr + ".memory", err}
	}
	return backends.Limits{Memory: mem, CPUs: m.CPUs.ValueFloat64(), Pids: m.Pids.ValueInt64()}, nil
}

// hostRules are a configured host's rules (trusted and unlimited for a host
// without a block, such as the default local host).
func (d *providerData) hostRules(host string) backends.Rules {
	if r, ok := d.rules[host]; ok {
		return r
	}
	return backends.Rules{Policy: backends.Policy{Level: backends.PolicyTrusted}}
}

// checkPoolRules refuses a pool whose hosts' rules differ: a sandbox is
// planned before the pool places it, and its plan must hold on whichever
// host it gets.
func checkPoolRules(d *providerData, diags *diag.Diagnostics) {
	for _, pool := range d.placer.pools {
		for _, h := range pool.hosts[min(1, len(pool.hosts)):] {
			first := pool.hosts[0]
			if !sameRules(d.hostRules(first), d.hostRules(h)) {
				diags.AddAttributeError(path.Root("host"), "Pool Hosts With Different Rules",
					fmt.Sprintf("hosts %q and %q of pool %q differ in policy, allowed_runtimes, allowed_external_networks, "+
						"allowed_external_volumes, default_limits or max_limits: a sandbox is planned before the pool picks its host, "+
						"so every host of a pool must have the same; give them the same rules, or put them in different pools", first, h, pool.name))
			}
		}
	}
}

func sameRules(a, b backends.Rules) bool {
	return a.Policy.Level == b.Policy.Level && slices.Equal(a.Policy.Runtimes, b.Policy.Runtimes) &&
		slices.Equal(a.Policy.ExternalNetworks, b.Policy.ExternalNetworks) && slices.Equal(a.Policy.ExternalVolumes, b.Policy.ExternalVolumes) &&
		a.Default == b.Default && a.Max == b.Max
}

// poolRules are the rules every host of pool shares (checkPoolRules).
func (d *providerData) poolRules(pool string) (backends.Rules, bool) {
	p, ok := d.placer.pools[pool]
	if !ok || len(p.hosts) == 0 {
		return backends.Rules{}, false
	}
	return d.hostRules(p.hosts[0]), true
}

// memorySize validates a size as compose writes one.
func memorySize() validator.String { return memorySizeValidator{} }

type memorySizeValidator struct{}

func (memorySizeValidator) Description(context.Context) string { return "a size such as 512m or 2g" }
func (v memorySizeValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (memorySizeValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, err := backends.ParseMemory(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Size", err.Error())
	}
}
