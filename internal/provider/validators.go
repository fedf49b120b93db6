package provider

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
)

// idValidator checks, at plan time, an argument that names a sandbox or a
// snapshot against the id grammar: a typo or an injection attempt such as
// `x; touch /tmp/p` is an error in the plan, before anything reaches a host
// (where it is refused again). Unknown values are checked when known.
func idValidator(what string) validator.String { return idGrammarValidator{what: what} }

type idGrammarValidator struct{ what string }

func (v idGrammarValidator) Description(context.Context) string {
	return fmt.Sprintf("must be a %s id: %s", v.what, checkpoint.IDGrammar)
}

func (v idGrammarValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (v idGrammarValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if id := req.ConfigValue.ValueString(); !checkpoint.IDPattern.MatchString(id) {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Id",
			fmt.Sprintf("%q is not a %s id: ids are %s.", id, v.what, checkpoint.IDGrammar))
	}
}

// ipAddress checks, at plan time, an argument that must be an IP address
// (publish_address): compose would refuse anything else only at create.
func ipAddress() validator.String { return ipAddressValidator{} }

type ipAddressValidator struct{}

func (ipAddressValidator) Description(context.Context) string {
	return "must be an IP address, such as 127.0.0.1 or ::1"
}

func (v ipAddressValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (ipAddressValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, err := netip.ParseAddr(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid IP Address",
			fmt.Sprintf("%q is not an IP address, such as 127.0.0.1 or ::1", req.ConfigValue.ValueString()))
	}
}

// positiveDuration holds a string to a positive Go duration ("30s", "5m").
func positiveDuration() validator.String { return positiveDurationValidator{} }

type positiveDurationValidator struct{}

func (positiveDurationValidator) Description(context.Context) string {
	return "a positive duration such as 30s or 5m"
}

func (v positiveDurationValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (positiveDurationValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if d, err := time.ParseDuration(req.ConfigValue.ValueString()); err != nil || d <= 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Duration",
			fmt.Sprintf("%q is not a positive duration such as 30s or 5m", req.ConfigValue.ValueString()))
	}
}
