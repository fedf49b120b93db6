package backends

import "github.com/sand-boxer/terraform-provider-sandboxer/internal/composefile"

// A host's policy and limits (ADR 0006): what compose files from strangers
// may ask of it. The controls and the rendering live with the compose
// file (composefile); these names are the provider's view of them.
type (
	Rules  = composefile.Rules
	Policy = composefile.Policy
	Level  = composefile.Level
	Limits = composefile.Limits
)

// The policy levels, loosest first.
const (
	PolicyTrusted    = composefile.Trusted
	PolicyBaseline   = composefile.Baseline
	PolicyRestricted = composefile.Restricted
)

// PolicyLevels are the levels' names, loosest first.
var PolicyLevels = composefile.Levels

// ParseMemory reads a size as compose writes one ("512m", "2g").
func ParseMemory(s string) (int64, error) { return composefile.ParseMemory(s) }

// SetRules records the rules a sandbox is created under and what its
// services may use together (total).
func (sb *Sandbox) SetRules(r Rules, total Limits) {
	if r.Policy.Level == "" && r.Default == (Limits{}) && r.Max == (Limits{}) {
		sb.Rules = nil
	} else {
		sb.Rules = &r
	}
	sb.Limits = nil
	if total != (Limits{}) {
		sb.Limits = &total
	}
}

// RulesOrNone are the rules the sandbox was created under (none for one
// created trusted and unlimited, or before rules existed).
func (sb *Sandbox) RulesOrNone() Rules {
	if sb.Rules == nil {
		return Rules{}
	}
	return *sb.Rules
}
