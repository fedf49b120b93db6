package provider

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// clusterProviderConfig is a provider block with the harness cluster as
// cluster "k8s".
func clusterProviderConfig(t *testing.T, c *testharness.Cluster) string {
	t.Helper()
	return fmt.Sprintf(`
provider "sandboxer" {
  cluster {
    name            = "k8s"
    kubeconfig_file = %q
    node_address    = %q
    storage_class   = %q
    helper_image    = %q
  }
}
`, testharness.Env(t, "SANDBOXER_TEST_KUBECONFIG"), c.NodeAddress, c.StorageClass, testharness.Image(t))
}

// clusterRepo is a compose repo of a one-shot seed that writes into a
// named volume, and a web server, started once the seed completed, that
// serves the repo's site directory and mounts the volume too.
func clusterRepo(t *testing.T) string {
	t.Helper()
	repo := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(repo, "site"), 0o755))
	must(t, os.WriteFile(filepath.Join(repo, "site", "index.html"), []byte("served from the repo\n"), 0o644))
	img := testharness.Image(t)
	must(t, os.WriteFile(filepath.Join(repo, "compose.yaml"), []byte(`services:
  seed:
    image: `+img+`
    restart: "no"
    command: ["sh", "-c", "echo seeded > /data/seed"]
    volumes: ["data:/data"]
  web:
    image: `+img+`
    command: ["httpd", "-f", "-p", "8080", "-h", "/site"]
    ports: ["8080"]
    environment:
      TOKEN: ${TOKEN}
      GREETING: hello
    volumes: ["./site:/site:ro", "data:/data"]
    depends_on:
      seed: {condition: service_completed_successfully}
volumes:
  data: {}
`), 0o644))
	return repo
}

// A compose file on a cluster through sandboxer_sandbox, as on a host:
// ready in depends_on order with its endpoint serving the repo's files,
// also through a tunnel; an env_wo value only in a Secret; a command reads
// what the one-shot service wrote; stopped and started in
// place with its volume kept; a Deployment scaled to 0 out of band plans
// an in-place start; an import plans nothing; and the destroy leaves no
// namespace and no volume.
func TestAccSandbox_composeOnCluster(t *testing.T) {
	testAccPreCheck(t)
	c := testharness.StartedCluster(t)
	repo := clusterRepo(t)
	config := func(desired string) string {
		return clusterProviderConfig(t, c) + fmt.Sprintf(`
resource "sandboxer_sandbox" "app" {
  profile        = "profile.compose-k8s"
  host           = "k8s"
  inputs         = { repo = %q }
  wait_for_ports = true
  desired_state  = %q
  env_wo         = { TOKEN = "wo-secret-value" }
}

resource "sandboxer_command" "seed" {
  host       = "k8s"
  sandbox_id = sandboxer_sandbox.app.id
  service    = "web"
  command    = ["cat", "/data/seed"]
}
`, repo, desired)
	}
	// A tunnel to web through the API server, used by local-exec in the
	// run that creates the sandbox.
	out := t.TempDir()
	tunnel := fmt.Sprintf(`
ephemeral "sandboxer_tunnel" "web" {
  host       = "k8s"
  sandbox_id = sandboxer_sandbox.app.id
  service    = "web"
  port       = 8080
}

resource "terraform_data" "fetch" {
  input = sandboxer_sandbox.app.id

  provisioner "local-exec" {
    command     = "busybox wget -q -O \"$OUT\" \"http://$ADDR/index.html\""
    environment = { ADDR = ephemeral.sandboxer_tunnel.web.address, OUT = %q }
  }
}
`, filepath.Join(out, "fetched"))
	var id string
	ns := func() string { return "sbx-" + id }
	ctx := context.Background()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		TerraformVersionChecks:   ephemeralCLIs,
		CheckDestroy: func(*terraform.State) error {
			if _, err := c.Client.CoreV1().Namespaces().Get(ctx, ns(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("namespace %s is still there after the destroy (err %v)", ns(), err)
			}
			pvs, err := c.Client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			for _, pv := range pvs.Items {
				if ref := pv.Spec.ClaimRef; ref != nil && ref.Namespace == ns() {
					return fmt.Errorf("volume %s of claim %s/%s is left after the destroy", pv.Name, ref.Namespace, ref.Name)
				}
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: config("running") + tunnel,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("sandboxer_sandbox.app", tfjsonpath.New("status"), knownvalue.StringExact("ready")),
					statecheck.ExpectKnownValue("sandboxer_sandbox.app", tfjsonpath.New("extension"), knownvalue.StringExact("ext.compose-k8s")),
					statecheck.ExpectKnownValue("sandboxer_command.seed", tfjsonpath.New("stdout"), knownvalue.StringExact("seeded\n")),
				},
				Check: func(s *terraform.State) error {
					attrs := s.RootModule().Resources["sandboxer_sandbox.app"].Primary.Attributes
					id = attrs["id"]
					if got := attrs["compose_project"]; got != ns() {
						return fmt.Errorf("compose_project = %q, want the namespace %q", got, ns())
					}
					endpoint := attrs["endpoints.web:8080"]
					if !strings.HasPrefix(endpoint, c.NodeAddress+":") {
						return fmt.Errorf("endpoints[web:8080] = %q, want %s:<nodePort>", endpoint, c.NodeAddress)
					}
					// wait_for_ports: it answers now, without a retry.
					resp, err := http.Get("http://" + endpoint + "/index.html")
					if err != nil {
						return err
					}
					defer func() { _ = resp.Body.Close() }()
					body, _ := io.ReadAll(resp.Body)
					if string(body) != "served from the repo\n" {
						return fmt.Errorf("the endpoint served %q", body)
					}
					if err := fileIs(out, "fetched", "served from the repo\n"); err != nil {
						return err
					}
					return envWOStaysSecret(ctx, t, c, ns(), s)
				},
			},
			{
				Config: config("stopped"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("sandboxer_sandbox.app", plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("sandboxer_sandbox.app", tfjsonpath.New("status"), knownvalue.StringExact("stopped")),
					statecheck.ExpectKnownValue("sandboxer_sandbox.app", tfjsonpath.New("endpoints"), knownvalue.MapExact(map[string]knownvalue.Check{})),
				},
				Check: func(*terraform.State) error {
					d, err := c.Client.AppsV1().Deployments(ns()).Get(ctx, "web", metav1.GetOptions{})
					if err != nil {
						return err
					}
					if d.Spec.Replicas == nil || *d.Spec.Replicas != 0 {
						return fmt.Errorf("deployment web has %v replicas while stopped", d.Spec.Replicas)
					}
					if _, err := c.Client.CoreV1().PersistentVolumeClaims(ns()).Get(ctx, "data", metav1.GetOptions{}); err != nil {
						return fmt.Errorf("the volume's claim is gone while stopped: %w", err)
					}
					return nil
				},
			},
			{
				// Started again: the volume kept what the seed wrote.
				Config: config("running"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("sandboxer_sandbox.app", plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("sandboxer_sandbox.app", tfjsonpath.New("status"), knownvalue.StringExact("ready")),
				},
				Check: func(*terraform.State) error {
					out, err := kubectlExec(t, ns(), "web", "cat", "/data/seed")
					if err != nil || out != "seeded\n" {
						return fmt.Errorf("after the start, /data/seed reads %q (%v)", out, err)
					}
					return nil
				},
			},
			{
				// Scaled to 0 out of band: drift, mended by a start in place.
				PreConfig: func() {
					patch := []byte(`{"spec":{"replicas":0}}`)
					if _, err := c.Client.AppsV1().Deployments(ns()).Patch(ctx, "web", k8stypes.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
						t.Fatal(err)
					}
				},
				Config: config("running"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("sandboxer_sandbox.app", plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction("sandboxer_command.seed", plancheck.ResourceActionNoop),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("sandboxer_sandbox.app", tfjsonpath.New("status"), knownvalue.StringExact("ready")),
				},
			},
			{
				ResourceName:            "sandboxer_sandbox.app",
				ImportState:             true,
				ImportStateVerify:       true,
				ImportStateIdFunc:       func(*terraform.State) (string, error) { return "k8s/" + id, nil },
				ImportStateVerifyIgnore: []string{"timeouts", "timings"},
			},
			{
				Config:   config("running"),
				PlanOnly: true,
			},
		},
	})
}

// envWOStaysSecret checks that an env_wo value reached the service
// through a Secret: in no ConfigMap of the namespace, nowhere in state,
// and in the container's environment (a value beside it, in a ConfigMap).
func envWOStaysSecret(ctx context.Context, t *testing.T, c *testharness.Cluster, ns string, s *terraform.State) error {
	const secret = "wo-secret-value"
	cms, err := c.Client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, cm := range cms.Items {
		for k, v := range cm.Data {
			if strings.Contains(v, secret) {
				return fmt.Errorf("ConfigMap %s holds the env_wo value under %s", cm.Name, k)
			}
		}
	}
	for name, r := range s.RootModule().Resources {
		for k, v := range r.Primary.Attributes {
			if strings.Contains(v, secret) {
				return fmt.Errorf("state holds the env_wo value in %s.%s", name, k)
			}
		}
	}
	got, err := kubectlExec(t, ns, "web", "sh", "-c", `[ "$TOKEN" = wo-secret-value ] && echo "$GREETING"`)
	if err != nil || got != "hello\n" {
		return fmt.Errorf("the env_wo value in web's environment: %q (%v)", got, err)
	}
	return nil
}

// kubectlExec runs a command in a service's pod with the harness's own
// kubectl: a second opinion beside the provider's exec.
func kubectlExec(t *testing.T, ns, service string, command ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := append([]string{"--kubeconfig", testharness.Env(t, "SANDBOXER_TEST_KUBECONFIG"), "-n", ns, "exec", "deploy/" + service, "-c", service, "--"}, command...)
	out, err := exec.CommandContext(ctx, testharness.Env(t, "SANDBOXER_TEST_KUBECTL"), args...).Output()
	return string(out), err
}

// A cluster's sandboxes are refused at plan time, before anything is
// sent, for what the cluster cannot do: a compose file a cluster cannot
// run, a lifetime, a profile of hosts on a cluster.
func TestAccSandbox_clusterPlanErrors(t *testing.T) {
	testAccPreCheck(t)
	c := testharness.StartedCluster(t)
	repo := t.TempDir()
	must(t, os.WriteFile(filepath.Join(repo, "compose.yaml"), []byte("services:\n  app:\n    image: "+testharness.Image(t)+"\n    network_mode: host\n"), 0o644))
	sandbox := func(profile, extra string) string {
		return clusterProviderConfig(t, c) + fmt.Sprintf(`
resource "sandboxer_sandbox" "app" {
  profile = %q
  host    = "k8s"
  inputs  = { repo = %q }
  %s
}
`, profile, repo, extra)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{Config: sandbox("profile.compose-k8s", ""), PlanOnly: true, ExpectError: regexp.MustCompile(`network_mode`)},
			{Config: sandbox("profile.compose-k8s", `ttl = "1h"`), PlanOnly: true, ExpectError: regexp.MustCompile(`no reaper`)},
			{Config: sandbox("profile.compose-e2e", ""), PlanOnly: true, ExpectError: regexp.MustCompile(`profile.compose-k8s`)},
		},
	})
}

// sandboxer_exec and sandboxer_logs on a cluster, invoked through the real
// CLI: a command's output streams; a failing one names its exit code and
// last lines; one past its timeout is gone from the pod; the logs show
// each line under its service; `terraform query` lists the sandbox.
func TestAccActions_onCluster(t *testing.T) {
	testAccPreCheck(t)
	skipBelowNatives(t)
	c := testharness.StartedCluster(t)
	tf := newDevCLI(t)
	repo := t.TempDir()
	must(t, os.WriteFile(filepath.Join(repo, "compose.yaml"), []byte(`services:
  worker:
    image: `+testharness.Image(t)+`
    command: ["sh", "-c", "echo worker listening; trap 'exit 0' TERM; while true; do sleep 1; done"]
`), 0o644))
	work := tf.dir(devCLIHeader + clusterProviderConfig(t, c) + fmt.Sprintf(`
resource "sandboxer_sandbox" "s" {
  profile = "profile.compose-k8s"
  host    = "k8s"
  inputs  = { repo = %q }
}

action "sandboxer_exec" "hello" {
  config {
    host       = "k8s"
    sandbox_id = sandboxer_sandbox.s.id
    service    = "worker"
    command    = ["sh", "-c", "echo line-one; echo line-two"]
  }
}

action "sandboxer_exec" "fail" {
  config {
    host       = "k8s"
    sandbox_id = sandboxer_sandbox.s.id
    service    = "worker"
    command    = ["sh", "-c", "echo about to fail; exit 7"]
  }
}

action "sandboxer_exec" "slow" {
  config {
    host       = "k8s"
    sandbox_id = sandboxer_sandbox.s.id
    service    = "worker"
    command    = ["sh", "-c", "sleep 1001 & sleep 1002; wait"]
    timeout    = "2s"
  }
}

action "sandboxer_logs" "all" {
  config {
    host       = "k8s"
    sandbox_id = sandboxer_sandbox.s.id
  }
}
`, repo))
	tf.run(work, "apply", "-auto-approve")
	t.Cleanup(func() { tf.run(work, "destroy", "-auto-approve") })
	ns := stateValue(t, tf.run(work, "state", "show", "sandboxer_sandbox.s"), "compose_project")

	if out := tf.run(work, "apply", "-auto-approve", "-invoke=action.sandboxer_exec.hello"); !strings.Contains(out, "line-one") || !strings.Contains(out, "line-two") {
		t.Fatalf("the exec's output:\n%s", out)
	}
	if out := tf.run(work, "apply", "-auto-approve", "-invoke=action.sandboxer_logs.all"); !strings.Contains(out, "worker | worker listening") {
		t.Fatalf("the logs action did not show the worker's log:\n%s", out)
	}
	out, err := tf.try(work, "apply", "-auto-approve", "-invoke=action.sandboxer_exec.fail")
	if err == nil || !strings.Contains(out, "exited with code 7") || !strings.Contains(out, "about to fail") {
		t.Fatalf("a failing command: %v\n%s", err, out)
	}
	out, err = tf.try(work, "apply", "-auto-approve", "-invoke=action.sandboxer_exec.slow")
	if err == nil || !strings.Contains(out, "longer than its timeout (2s)") {
		t.Fatalf("a command past its timeout: %v\n%s", err, out)
	}
	// The pattern does not match the grep's own command line.
	left, err := kubectlExec(t, ns, "worker", "sh", "-c", `cat /proc/[0-9]*/cmdline | tr '\0' ' ' | grep -c 'sleep 100[12]' || true`)
	if err != nil || strings.TrimSpace(left) != "0" {
		t.Fatalf("processes of the command after its timeout: %q (%v), want 0", left, err)
	}
	if state := tf.run(work, "state", "list"); strings.TrimSpace(state) != "sandboxer_sandbox.s" {
		t.Errorf("state after the actions: %q", state)
	}
	// Listed by `terraform query`, with its state.
	must(t, os.WriteFile(filepath.Join(work, "list.tfquery.hcl"), []byte(`
list "sandboxer_sandbox" "k8s" {
  provider = sandboxer
  config {
    host = "k8s"
  }
}
`), 0o600))
	id := strings.TrimPrefix(ns, "sbx-")
	if out := tf.run(work, "query"); !strings.Contains(out, id+" (profile.compose-k8s on k8s, ready)") {
		t.Errorf("terraform query does not list sandbox %s as ready:\n%s", id, out)
	}
}

// A pool of a host and a cluster: a sandbox of profile.compose-k8s goes to
// the cluster, one of a host profile to the host, and the cluster's
// max_sandboxes holds at plan time.
func TestAccSandbox_poolMixesHostsAndClusters(t *testing.T) {
	testAccPreCheck(t)
	testharness.Alone(t) // the cluster's capacity counts every sandbox on it
	c := testharness.StartedCluster(t)
	h := newAccHost(t)
	repo := t.TempDir()
	must(t, os.WriteFile(filepath.Join(repo, "compose.yaml"), []byte("services:\n  app:\n    image: "+testharness.Image(t)+
		"\n    command: [\"sh\", \"-c\", \"trap 'exit 0' TERM; while true; do sleep 1; done\"]\n"), 0o644))
	provider := fmt.Sprintf(`
provider "sandboxer" {
  host {
    name             = "harness"
    address          = %q
    user             = %q
    private_key_file = %q
    known_hosts_file = %q
    root_dir         = %q
    pool             = "mixed"
  }
  cluster {
    name            = "k8s"
    kubeconfig_file = %q
    node_address    = %q
    storage_class   = %q
    helper_image    = %q
    pool            = "mixed"
    max_sandboxes   = 1
  }
}
`, testharness.Env(t, "SANDBOXER_TEST_SSH_ADDR"), testharness.Env(t, "SANDBOXER_TEST_SSH_USER"),
		testharness.Env(t, "SANDBOXER_TEST_SSH_KEY"), testharness.Env(t, "SANDBOXER_TEST_KNOWN_HOSTS"), h.rootDir,
		testharness.Env(t, "SANDBOXER_TEST_KUBECONFIG"), c.NodeAddress, c.StorageClass, testharness.Image(t))
	sandboxes := func(k8s int) string {
		return provider + fmt.Sprintf(`
resource "sandboxer_sandbox" "k" {
  count     = %d
  profile   = "profile.compose-k8s"
  host_pool = "mixed"
  inputs    = { repo = %q }
}

resource "sandboxer_sandbox" "w" {
  profile   = "profile.workspace"
  host_pool = "mixed"
}
`, k8s, repo)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             h.checkNothingLeft(t),
		Steps: []resource.TestStep{
			{
				Config: sandboxes(1),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("sandboxer_sandbox.k[0]", tfjsonpath.New("host"), knownvalue.StringExact("k8s")),
					statecheck.ExpectKnownValue("sandboxer_sandbox.k[0]", tfjsonpath.New("status"), knownvalue.StringExact("ready")),
					statecheck.ExpectKnownValue("sandboxer_sandbox.w", tfjsonpath.New("host"), knownvalue.StringExact("harness")),
				},
			},
			{
				Config:      sandboxes(2),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)pool "mixed" has no host that can take another sandbox:.*k8s: full: 1 of 1 sandboxes`),
			},
		},
	})
}
