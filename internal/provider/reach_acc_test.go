package provider

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// reachableRepo is a stack as people write it: a fixed container name and
// a fixed host port on the web server, and a client that reaches the web
// server by that container name (its healthcheck, so the sandbox is ready
// only when the name resolves inside the sandbox).
func reachableRepo(t *testing.T, image string) string {
	t.Helper()
	compose := fmt.Sprintf(`services:
  web:
    image: %[1]s
    container_name: legacy-web
    ports: ["18080:80"]
    command: ["sh", "-c", "mkdir -p /www && hostname > /www/index.html && exec httpd -f -p 80 -h /www"]
  client:
    image: %[1]s
    container_name: legacy-client
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
    healthcheck:
      test: ["CMD", "wget", "-q", "-O", "/dev/null", "http://legacy-web/"]
      interval: 1s
      retries: 30
`, image)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "docker-compose.yml"), []byte(compose), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// httpGet fetches url from this machine (the one running Terraform).
func httpGet(url string) (string, error) {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url) //nolint:noctx // a test's one request, bounded by the client's timeout
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }() // a read-only body: nothing to report
	body, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return strings.TrimSpace(string(body)), err
}

// Two copies of a stack with a fixed container name and a fixed host
// port run side by side on one host, in one apply: each is ready, answers
// HTTP from this machine at its own endpoint, and its client still
// reaches the web server by its original container name. A container
// restarted with a new host port: refresh updates endpoints in place and
// plans nothing.
func TestAccSandbox_composeCopiesSideBySide(t *testing.T) {
	testAccPreCheck(t)
	testharness.RequireDocker(t)
	h := newAccHost(t)
	repo := reachableRepo(t, testharness.Image(t))
	config := h.providerConfig(t) + fmt.Sprintf(`
resource "sandboxer_sandbox" "copy" {
  count          = 2
  profile        = "profile.compose-e2e"
  host           = "harness"
  inputs         = { repo = %q }
  wait_for_ports = true
}

output "web" {
  value = sandboxer_sandbox.copy[*].endpoints["web:80"]
}
`, repo)
	var web [2]string
	var projects [2]string
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             h.checkNothingLeft(t),
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("sandboxer_sandbox.copy[0]", tfjsonpath.New("status"), knownvalue.StringExact("ready")),
					statecheck.ExpectKnownValue("sandboxer_sandbox.copy[1]", tfjsonpath.New("status"), knownvalue.StringExact("ready")),
					statecheck.ExpectKnownValue("sandboxer_sandbox.copy[0]", tfjsonpath.New("published_ports"), knownvalue.StringExact("free")),
					statecheck.ExpectKnownValue("sandboxer_sandbox.copy[0]", tfjsonpath.New("services").AtSliceIndex(1).AtMapKey("ports").AtSliceIndex(0).AtMapKey("target"), knownvalue.Int64Exact(80)),
				},
				Check: func(s *terraform.State) error {
					for i := range 2 {
						addr := fmt.Sprintf("sandboxer_sandbox.copy.%d", i)
						web[i] = stateAttr(s, addr, "endpoints.web:80")
						projects[i] = stateAttr(s, addr, "compose_project")
						if !strings.HasPrefix(web[i], "127.0.0.1:") || strings.HasSuffix(web[i], ":18080") {
							return fmt.Errorf("%s: endpoint %q, want 127.0.0.1 and a free port", addr, web[i])
						}
						if got := stateAttr(s, addr, "services.1.ports.0.address"); got != web[i] {
							return fmt.Errorf("%s: services[1].ports[0].address %q, endpoints %q", addr, got, web[i])
						}
						body, err := httpGet("http://" + web[i] + "/")
						if err != nil {
							return err
						}
						// The answer comes from this copy's web container.
						name, err := exec.Command("docker", "inspect", "-f", "{{.Config.Hostname}}", projects[i]+"-legacy-web").Output()
						if err != nil || strings.TrimSpace(string(name)) != body {
							return fmt.Errorf("%s answered %q; container %s-legacy-web is %q (%v)", web[i], body, projects[i], name, err)
						}
					}
					if web[0] == web[1] {
						return fmt.Errorf("both copies at %s", web[0])
					}
					return nil
				},
			},
			{
				// Restarted out of band: the engine gives the port a new
				// host port; refresh takes it in place.
				PreConfig: func() {
					c := projects[0] + "-legacy-web"
					if out, err := exec.Command("docker", "stop", "-t", "1", c).CombinedOutput(); err != nil {
						t.Fatalf("docker stop: %v %s", err, out)
					}
					// The old host port held here, so that the engine must pick
					// another. A port that cannot be bound is held already: by
					// a sandbox of a test running beside this one, which took
					// it as free once the stop released it.
					if l, err := net.Listen("tcp", ":"+strings.TrimPrefix(web[0], "127.0.0.1:")); err == nil {
						t.Cleanup(func() { _ = l.Close() })
					} else if !errors.Is(err, syscall.EADDRINUSE) {
						t.Fatal(err)
					}
					if out, err := exec.Command("docker", "start", c).CombinedOutput(); err != nil {
						t.Fatalf("docker start: %v %s", err, out)
					}
				},
				RefreshState: true,
				Check: func(s *terraform.State) error {
					now := stateAttr(s, "sandboxer_sandbox.copy.0", "endpoints.web:80")
					if now == web[0] {
						return fmt.Errorf("endpoint still %s after the restart", now)
					}
					_, err := httpGet("http://" + now + "/")
					return err
				},
			},
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
			},
		},
	})
}
