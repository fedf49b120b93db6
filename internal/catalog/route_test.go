package catalog

import (
	"strings"
	"testing"
	"time"
)

func credits(v float64) *float64 { return &v }

func TestRouting(t *testing.T) {
	c, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	get := func(n string) *Profile { p, _ := c.Get(n); return p }
	declared := func(hosts ...string) func(string) bool {
		return func(h string) bool {
			for _, x := range hosts {
				if x == h {
					return true
				}
			}
			return false
		}
	}
	cases := []struct {
		name    string
		profile string
		req     RouteRequest
		ext     string
		host    string
		quote   float64
		reason  string
		err     string
	}{
		{"self-hosted default", "profile.compose-e2e", RouteRequest{Declared: declared("local")}, "ext.compose-ssh", "local", 0, "", ""},
		{"self-hosted default host", "profile.compose-e2e", RouteRequest{DefaultHost: "b1"}, "ext.compose-ssh", "b1", 0, "", ""},
		{"self-hosted argument wins", "profile.compose-e2e", RouteRequest{Host: "b2", DefaultHost: "b1"}, "ext.compose-ssh", "b2", 0, "", ""},
		{"metered with credits", "profile.saas-stub", RouteRequest{TTL: 2 * time.Hour, Credits: credits(5)}, "ext.saas-stub", "local", 1, "", ""},
		{"metered, credits short", "profile.saas-stub", RouteRequest{TTL: 2 * time.Hour, Credits: credits(0.5)}, "", "", 0, "", "credits are short"},
		{"metered without ledger", "profile.saas-stub", RouteRequest{TTL: time.Hour}, "", "", 0, "", "set credits_file"},
		{"burst with credits", "profile.burst-sandbox", RouteRequest{TTL: time.Hour, Credits: credits(1), Declared: declared("local", "burst")}, "ext.saas-stub", "local", 0.5, "", ""},
		{"burst falls back to its placement host", "profile.burst-sandbox", RouteRequest{TTL: time.Hour, Credits: credits(0.1), Declared: declared("local", "burst")},
			"ext.compose-ssh", "burst", 0, "credits are short", ""},
		{"burst falls back to local without a burst host", "profile.burst-sandbox", RouteRequest{TTL: time.Hour, Credits: credits(0), Declared: declared("local")},
			"ext.compose-ssh", "local", 0, "routed to the fallback ext.compose-ssh", ""},
		{"burst asked for a remote host", "profile.burst-sandbox", RouteRequest{Host: "b1", TTL: time.Hour, Credits: credits(100)},
			"ext.compose-ssh", "b1", 0, "serves only the local host", ""},
	}
	for _, tc := range cases {
		r, err := c.Route(get(tc.profile), tc.req)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: want error %q, got %+v %v", tc.name, tc.err, r, err)
			}
			continue
		}
		if err != nil || r.Extension != tc.ext || r.Host != tc.host || r.QuoteUSD != tc.quote || !strings.Contains(r.Reason, tc.reason) {
			t.Errorf("%s: got %+v %v", tc.name, r, err)
		}
	}
}

// Pools: the host_pool argument, or a placement entry naming a pool, leave
// the host to be chosen at create; a host argument or the default host wins.
func TestRoutingToPools(t *testing.T) {
	c, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	get := func(n string) *Profile { p, _ := c.Get(n); return p }
	isPool := func(name string) func(string) bool { return func(p string) bool { return p == name } }
	cases := []struct {
		name, profile string
		req           RouteRequest
		host, pool    string
		reason, err   string
	}{
		{"host_pool", "profile.compose-e2e", RouteRequest{Pool: "ci"}, "", "ci", "", ""},
		{"host wins over host_pool", "profile.compose-e2e", RouteRequest{Host: "b1", Pool: "ci"}, "b1", "", "", ""},
		{"host_pool wins over the default host", "profile.compose-e2e", RouteRequest{Pool: "ci", DefaultHost: "b1"}, "", "ci", "", ""},
		{"a placement entry naming a pool", "profile.burst-sandbox", RouteRequest{TTL: time.Hour, Credits: credits(0), DeclaredPool: isPool("burst")},
			"", "burst", `routed to the fallback ext.compose-ssh on pool "burst"`, ""},
		{"a metered profile asked for a pool", "profile.saas-stub", RouteRequest{Pool: "ci", TTL: time.Hour, Credits: credits(5)}, "", "", "", `pool "ci" was asked for, and the profile has no fallback`},
		{"its fallback goes to the pool", "profile.burst-sandbox", RouteRequest{Pool: "ci", TTL: time.Hour, Credits: credits(5)}, "", "ci", `pool "ci" was asked for`, ""},
	}
	for _, tc := range cases {
		r, err := c.Route(get(tc.profile), tc.req)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: want error %q, got %+v %v", tc.name, tc.err, r, err)
			}
			continue
		}
		if err != nil || r.Host != tc.host || r.Pool != tc.pool || !strings.Contains(r.Reason, tc.reason) {
			t.Errorf("%s: got %+v %v", tc.name, r, err)
		}
	}
}
