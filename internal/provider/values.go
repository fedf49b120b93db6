package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// Conversions between Terraform values and the Go values backends take,
// shared by every model.

func stringOrNull(s string) types.String {
	if s == "" {
		return types.StringNull()
	}
	return types.StringValue(s)
}

// boolOr is b's value, or def when b is unset.
func boolOr(b types.Bool, def bool) bool {
	if b.IsNull() || b.IsUnknown() {
		return def
	}
	return b.ValueBool()
}

// mapFromHost converts a map read from the host. An empty map keeps the
// current value's form (null or {}), so a config that omits the attribute
// and one that writes {} both show no diff.
func mapFromHost(ctx context.Context, current types.Map, m map[string]string, diags *diag.Diagnostics) types.Map {
	if len(m) == 0 {
		if !current.IsNull() && !current.IsUnknown() && len(current.Elements()) == 0 {
			return current
		}
		return types.MapNull(types.StringType)
	}
	v, d := types.MapValueFrom(ctx, types.StringType, m)
	diags.Append(d...)
	return v
}

// stringMap reads a map attribute; null and unknown read as empty.
func stringMap(ctx context.Context, v types.Map, diags *diag.Diagnostics) map[string]string {
	out := map[string]string{}
	if v.IsNull() || v.IsUnknown() {
		return out
	}
	diags.Append(v.ElementsAs(ctx, &out, false)...)
	return out
}

// listFromHost converts a string list read from the host, keeping the
// current value's form when both are empty (as mapFromHost does).
func listFromHost(ctx context.Context, current types.List, l []string, diags *diag.Diagnostics) types.List {
	if len(l) == 0 {
		if !current.IsNull() && !current.IsUnknown() && len(current.Elements()) == 0 {
			return current
		}
		return types.ListNull(types.StringType)
	}
	v, d := types.ListValueFrom(ctx, types.StringType, l)
	diags.Append(d...)
	return v
}

// stringList reads a list attribute; null and unknown read as empty.
func stringList(ctx context.Context, v types.List, diags *diag.Diagnostics) []string {
	var out []string
	if v.IsNull() || v.IsUnknown() {
		return out
	}
	diags.Append(v.ElementsAs(ctx, &out, false)...)
	return out
}

func nonNilList(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
