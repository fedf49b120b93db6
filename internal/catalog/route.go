package catalog

import (
	"fmt"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/metering"
)

// LocalHost is the name of the built-in host that runs on this machine
// without SSH (the one place it is written); metered (SaaS) sandboxes are
// served there.
const LocalHost = "local"

// RouteRequest is what routing knows at plan time.
type RouteRequest struct {
	Host         string            // the sandbox's host argument, "" when unset
	Pool         string            // the sandbox's host_pool argument, "" when unset
	DefaultHost  string            // the provider's default_host / SANDBOXER_HOST
	Declared     func(string) bool // whether the provider declares a host
	DeclaredPool func(string) bool // whether a host block names a pool
	TTL          time.Duration     // the sandbox's lifetime, for a quote
	Credits      *float64          // available credits; nil without a ledger
}

// Route is the decision: which extension serves the sandbox, on which host,
// and at what quoted cost. Reason explains a fallback.
type Route struct {
	Extension string
	Host      string // "" when Pool is set
	Pool      string // a host pool: the host is chosen when the sandbox is created
	Metered   bool
	QuoteUSD  float64
	Reason    string
}

// Route decides how a profile is served. A self-hosted profile runs on the
// host argument, else in the host_pool argument's pool, else on the default
// host, else on its first placement entry the provider declares (a host, or
// a pool), else on local. A metered profile runs on local when the credits cover
// its quote (hourly price × ttl); otherwise it falls back to the profile's
// fallback extension (placed as a self-hosted profile), or is refused.
func (c *Catalog) Route(p *Profile, req RouteRequest) (Route, error) {
	decl, err := c.Extension(p.Extension)
	if err != nil {
		return Route{}, err
	}
	if decl.Kind != "metered" {
		host, pool := Place(p, req)
		return Route{Extension: p.Extension, Host: host, Pool: pool}, nil
	}
	quote := metering.Quote(p.HourlyPriceUSD, req.TTL)
	fallback := func(why string) (Route, error) {
		if p.Fallback == "" {
			return Route{}, fmt.Errorf("profile %s: %s, and the profile has no fallback", p.Name, why)
		}
		host, pool := Place(p, req)
		where := fmt.Sprintf("host %q", host)
		if pool != "" {
			where = fmt.Sprintf("pool %q", pool)
		}
		return Route{Extension: p.Fallback, Host: host, Pool: pool,
			Reason: fmt.Sprintf("profile %s: %s; routed to the fallback %s on %s", p.Name, why, p.Fallback, where)}, nil
	}
	switch {
	case req.Host != "" && req.Host != LocalHost:
		return fallback(fmt.Sprintf("%s serves only the local host, and host %q was asked for", p.Extension, req.Host))
	case req.Host == "" && req.Pool != "":
		return fallback(fmt.Sprintf("%s serves only the local host, and pool %q was asked for", p.Extension, req.Pool))
	case req.Credits == nil:
		return Route{}, fmt.Errorf("profile %s is metered (%s): set credits_file in the provider block", p.Name, p.Extension)
	case *req.Credits < quote:
		return fallback(fmt.Sprintf("credits are short: %.2f USD available, %.2f USD quoted (%.2f USD/h for %s)",
			*req.Credits, quote, p.HourlyPriceUSD, req.TTL))
	}
	return Route{Extension: p.Extension, Host: LocalHost, Metered: true, QuoteUSD: quote}, nil
}

// Place applies the placement rule for self-hosted extensions: a host, or
// a pool to choose one from when the sandbox is created. It needs only
// req's Host, Pool, DefaultHost, Declared and DeclaredPool.
func Place(p *Profile, req RouteRequest) (host, pool string) {
	switch {
	case req.Host != "":
		return req.Host, ""
	case req.Pool != "":
		return "", req.Pool
	case req.DefaultHost != "":
		return req.DefaultHost, ""
	}
	for _, h := range p.Placement {
		if req.Declared != nil && req.Declared(h) {
			return h, ""
		}
		if req.DeclaredPool != nil && req.DeclaredPool(h) {
			return "", h
		}
	}
	return LocalHost, ""
}
