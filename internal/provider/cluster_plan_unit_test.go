package provider

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// A cluster's plan-time rules, with no cluster: the kubeconfig names an
// API server that only counts what it is sent, and a plan of new
// sandboxes must send it nothing.

// countingAPIServer is an API server that answers nothing and counts the
// requests it gets; it returns a kubeconfig naming it.
func countingAPIServer(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		http.Error(w, "no cluster here", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	must(t, os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: not-a-secret}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, srv.URL)), 0o600))
	return kubeconfig, &n
}

func clusterPlanConfig(t *testing.T, kubeconfig, compose, profile, host, extra string) string {
	t.Helper()
	repo := t.TempDir()
	must(t, os.WriteFile(filepath.Join(repo, "compose.yaml"), []byte(compose), 0o644))
	where := fmt.Sprintf("host = %q", host)
	if host == "" {
		where = ""
	}
	return fmt.Sprintf(`
provider "sandboxer" {
  host {
    name     = "build"
    local    = true
    root_dir = %q
    pool     = "hosts"
  }
  cluster {
    name            = "k8s"
    kubeconfig_file = %q
    policy          = "baseline"
  }
}

resource "sandboxer_sandbox" "app" {
  profile = %q
  %s
  inputs  = { repo = %q }
%s
}
`, t.TempDir(), kubeconfig, profile, where, repo, extra)
}

func TestUnitClusterPlan_servicesWithoutAsking(t *testing.T) {
	requireCLI(t)
	kubeconfig, requests := countingAPIServer(t)
	compose := "services:\n  web:\n    image: nginx\n    ports: [\"80\"]\n    depends_on:\n      db: {condition: service_healthy}\n" +
		"  db:\n    image: postgres\n    healthcheck:\n      test: [\"CMD\", \"pg_isready\"]\n"
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{{
			Config:             clusterPlanConfig(t, kubeconfig, compose, "profile.compose-k8s", "k8s", ""),
			PlanOnly:           true,
			ExpectNonEmptyPlan: true,
			ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
				plancheck.ExpectKnownValue("sandboxer_sandbox.app", tfjsonpath.New("extension"), knownvalue.StringExact("ext.compose-k8s")),
				plancheck.ExpectKnownValue("sandboxer_sandbox.app", tfjsonpath.New("services").AtSliceIndex(0).AtMapKey("name"), knownvalue.StringExact("db")),
				plancheck.ExpectKnownValue("sandboxer_sandbox.app", tfjsonpath.New("services").AtSliceIndex(1).AtMapKey("name"), knownvalue.StringExact("web")),
			}},
		}},
	})
	if n := requests.Load(); n != 0 {
		t.Errorf("the plan sent the API server %d requests, want none", n)
	}
}

func TestUnitClusterPlan_refusals(t *testing.T) {
	requireCLI(t)
	kubeconfig, requests := countingAPIServer(t)
	ok := "services:\n  web:\n    image: nginx\n"
	cases := map[string]struct {
		compose, profile, host, extra string
		want                          *regexp.Regexp
	}{
		"what a cluster cannot run, all at once": {
			compose: "services:\n  web:\n    image: nginx\n    network_mode: host\n  dev:\n    image: nginx\n    devices: [\"/dev/fuse\"]\n",
			profile: "profile.compose-k8s", host: "k8s",
			want: regexp.MustCompile(`(?s)Invalid Compose File.*line 4.*network_mode.*Invalid Compose File.*line 7.*devices`),
		},
		"the cluster's policy": {
			compose: "services:\n  web:\n    image: nginx\n    privileged: true\n",
			profile: "profile.compose-k8s", host: "k8s",
			want: regexp.MustCompile(`(?s)Invalid Compose File.*privileged`),
		},
		"a lifetime": {
			compose: ok, profile: "profile.compose-k8s", host: "k8s", extra: `  ttl = "2h"`,
			want: regexp.MustCompile(`(?s)Lifetime Not Supported on Clusters.*no reaper`),
		},
		"a profile of hosts on a cluster": {
			compose: ok, profile: "profile.compose-e2e", host: "k8s",
			want: regexp.MustCompile(`(?s)Profile Runs on Hosts.*profile.compose-k8s`),
		},
		"a pool without a cluster": {
			compose: ok, profile: "profile.compose-k8s", extra: `  host_pool = "hosts"`,
			want: regexp.MustCompile(`(?s)pool "hosts" has no cluster block, where profile.compose-k8s's sandboxes go\s+\(its members: build\)`),
		},
		"profile.compose-k8s on a host": {
			compose: ok, profile: "profile.compose-k8s", host: "build",
			want: regexp.MustCompile(`(?s)Profile Runs on Clusters.*declared clusters: k8s`),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProviders,
				Steps: []resource.TestStep{{
					Config:      clusterPlanConfig(t, kubeconfig, tc.compose, tc.profile, tc.host, tc.extra),
					PlanOnly:    true,
					ExpectError: tc.want,
				}},
			})
		})
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the plans sent the API server %d requests, want none", n)
	}
}
