package provider

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// ephemeralCLIs are the CLIs with ephemeral resources: Terraform 1.10 and
// OpenTofu 1.11 (which reports its own version, above 1.10 too).
var ephemeralCLIs = []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_10_0)}

// webRepo is a compose project whose one service, web, serves
// /www/index.html (holding the compose variable BODY) with busybox httpd on
// port 8080, publishing no port.
func webRepo(t *testing.T) string {
	t.Helper()
	compose := `services:
  web:
    image: ` + testharness.Image(t) + `
    command: ["sh", "-c", "mkdir -p /www && echo \"$$BODY\" > /www/index.html && exec httpd -f -p 8080 -h /www"]
    environment:
      BODY: ${BODY}
    stop_signal: SIGKILL
    healthcheck:
      test: ["CMD", "wget", "-q", "-O", "/dev/null", "http://127.0.0.1:8080/"]
      interval: 1s
      retries: 30
`
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "compose.yaml"), []byte(compose), 0o644))
	return dir
}

// noTraceOf walks dirs (the CLI's working directories: state, plan and
// backup files) and fails on any file but configuration holding one of
// words, or on a state file holding an instance of an ephemeral resource.
// A state may name one, as configuration does: Terraform lists
// `ephemeral.sandboxer_tunnel.x` among the dependencies of what used it.
func noTraceOf(words []string, dirs ...string) error {
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Type()&fs.ModeSymlink != 0 || strings.HasSuffix(p, ".tf") {
				return err
			}
			data, err := os.ReadFile(p) //nolint:gosec // G122: the test's own directories, nothing swaps them
			if err != nil {
				return err
			}
			for _, w := range words {
				if i := strings.Index(string(data), w); i >= 0 {
					return fmt.Errorf("%s holds %q: ...%s...", p, w, data[max(0, i-200):min(len(data), i+len(w)+100)])
				}
			}
			if !strings.HasSuffix(p, ".tfstate") && !strings.HasSuffix(p, ".tfstate.backup") {
				return nil
			}
			var state struct {
				Resources []struct{ Mode, Type string } `json:"resources"`
			}
			if err := json.Unmarshal(data, &state); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			for _, r := range state.Resources {
				if r.Mode == "ephemeral" || strings.HasPrefix(r.Type, "sandboxer_tunnel") {
					return fmt.Errorf("%s holds a %s resource of type %s", p, r.Mode, r.Type)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// freePort is a loopback port nothing listens on (it may be taken again
// later, as any port may; nothing else here picks ports by number).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }() // only its number was wanted
	_, port, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// closedNow fails unless nothing accepts connections at addr any more.
func closedNow(addr string) error {
	if c, err := net.DialTimeout("tcp", addr, 5*time.Second); err == nil {
		_ = c.Close() // it should not have been accepted
		return fmt.Errorf("%s still accepts connections after the run", addr)
	}
	return nil
}

// A CI job's use of a tunnel: compose sandboxes whose web service
// publishes no port, on the SSH host (its host found by asking the hosts)
// and on local, each fetched from this machine by a local-exec provisioner
// through its tunnel, in the same run that creates them. Then: the tunnels
// are closed, and neither state nor plan files hold them or their addresses. The
// plans of the later steps open tunnels to the existing sandbox, and fail
// on a service it lacks, a port nothing listens on and a sandbox no host has.
func TestAccTunnel_fetchThroughTunnel(t *testing.T) {
	testAccPreCheck(t)
	testharness.RequireDocker(t)
	h := newAccHost(t)
	repo := webRepo(t)
	out := t.TempDir()
	workDir := t.TempDir()
	t.Setenv("TF_ACC_TEMP_DIR", workDir)
	sandboxes := h.providerConfig(t) + fmt.Sprintf(`
resource "sandboxer_sandbox" "ssh" {
  profile = "profile.compose-e2e"
  host    = "harness"
  inputs  = { repo = %[1]q }
  env     = { BODY = "served on harness" }
}

resource "sandboxer_sandbox" "local" {
  profile = "profile.compose-e2e"
  host    = "local"
  inputs  = { repo = %[1]q }
  env     = { BODY = "served on local" }
}
`, repo)
	fetch := func(name, tunnel string) string {
		return fmt.Sprintf(`
resource "terraform_data" "fetch_%[1]s" {
  input = sandboxer_sandbox.%[1]s.id

  provisioner "local-exec" {
    command = "[ \"$LOCAL_HOST:$LOCAL_PORT\" = \"$ADDR\" ] && busybox wget -q -O \"$OUT\" \"http://$ADDR/index.html\" && echo \"$ADDR\" > \"$OUT.addr\""
    environment = {
      ADDR       = ephemeral.sandboxer_tunnel.%[2]s.address
      LOCAL_HOST = ephemeral.sandboxer_tunnel.%[2]s.local_host
      LOCAL_PORT = ephemeral.sandboxer_tunnel.%[2]s.local_port
      OUT        = %[3]q
    }
  }
}
`, name, tunnel, filepath.Join(out, name))
	}
	// The local tunnel on a port of the test's choosing, the other on any.
	fixed := freePort(t)
	config := sandboxes + fmt.Sprintf(`
ephemeral "sandboxer_tunnel" "ssh" {
  sandbox_id = sandboxer_sandbox.ssh.id
  service    = "web"
  port       = 8080
}

ephemeral "sandboxer_tunnel" "local" {
  host       = "local"
  sandbox_id = sandboxer_sandbox.local.id
  service    = "web"
  port       = 8080
  local_port = %d
}
`, fixed) + fetch("ssh", "ssh") + fetch("local", "local")
	bad := func(args string) string {
		return sandboxes + `
ephemeral "sandboxer_tunnel" "bad" {
` + args + `
}
` + strings.Replace(fetch("ssh", "bad"), "fetch_ssh", "fetch_bad", 1)
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		TerraformVersionChecks:   ephemeralCLIs,
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             h.checkNothingLeft(t),
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: func(*terraform.State) error {
					var addrs []string
					for name, body := range map[string]string{"ssh": "served on harness\n", "local": "served on local\n"} {
						if err := fileIs(out, name, body); err != nil {
							return fmt.Errorf("fetched through the tunnel: %w", err)
						}
						addr, err := os.ReadFile(filepath.Join(out, name+".addr"))
						if err != nil {
							return err
						}
						addrs = append(addrs, strings.TrimSpace(string(addr)))
					}
					if !slices.Contains(addrs, fmt.Sprintf("127.0.0.1:%d", fixed)) {
						return fmt.Errorf("tunnels at %v; the local one should be at its local_port %d", addrs, fixed)
					}
					for _, addr := range addrs {
						if err := closedNow(addr); err != nil {
							return err
						}
					}
					return noTraceOf(addrs, workDir)
				},
			},
			{
				Config:      bad(`sandbox_id = sandboxer_sandbox.ssh.id` + "\n" + `service = "nope"` + "\n" + `port = 8080`),
				ExpectError: wrapped(`Unable to Open Tunnel[\s\S]*has no service "nope"; its services: web`),
			},
			{
				Config:      bad(`sandbox_id = sandboxer_sandbox.ssh.id` + "\n" + `service = "web"` + "\n" + `port = 8081`),
				ExpectError: wrapped(`Unable to Open Tunnel[\s\S]*nothing accepts connections on port 8081`),
			},
			{
				Config:      bad(fmt.Sprintf(`sandbox_id = %q`, backends.NewID()) + "\n" + `service = "web"` + "\n" + `port = 8080`),
				ExpectError: wrapped(`Unable to Open Tunnel[\s\S]*is on none of the hosts searched`),
			},
		},
	})
}

// A database that publishes no port, written to from this machine with
// psql through the tunnel in the run that creates it; the row is then in
// that sandbox's database, as the container itself shows.
func TestAccTunnel_postgres(t *testing.T) {
	testAccPreCheck(t)
	testharness.RequireDocker(t)
	if _, err := exec.LookPath("psql"); err != nil {
		testharness.Env(t, "SANDBOXER_TEST_NO_PSQL") // skips, or fails under CI: install.sh installs it
	}
	h := newAccHost(t)
	repo := t.TempDir()
	must(t, os.WriteFile(filepath.Join(repo, "compose.yaml"), []byte(`services:
  db:
    image: `+testharness.PGImage(t)+`
    healthcheck:
      test: ["CMD", "pg_isready", "-h", "127.0.0.1", "-U", "postgres"]
      interval: 1s
      retries: 60
`), 0o644))
	config := h.providerConfig(t) + fmt.Sprintf(`
resource "sandboxer_sandbox" "db" {
  profile = "profile.compose-e2e"
  host    = "harness"
  inputs  = { repo = %q }
}

ephemeral "sandboxer_tunnel" "db" {
  sandbox_id = sandboxer_sandbox.db.id
  service    = "db"
  port       = 5432
}

resource "terraform_data" "migrate" {
  input = sandboxer_sandbox.db.id

  provisioner "local-exec" {
    command = "psql -v ON_ERROR_STOP=1 -U postgres -c \"CREATE TABLE notes (body text); INSERT INTO notes VALUES ('written through the tunnel')\""
    environment = {
      PGHOST           = ephemeral.sandboxer_tunnel.db.local_host
      PGPORT           = ephemeral.sandboxer_tunnel.db.local_port
      PGCONNECT_TIMEOUT = "10"
    }
  }
}
`, repo)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		TerraformVersionChecks:   ephemeralCLIs,
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             h.checkNothingLeft(t),
		Steps: []resource.TestStep{{
			Config: config,
			Check: func(s *terraform.State) error {
				project := stateAttr(s, "sandboxer_sandbox.db", "compose_project")
				container, err := exec.Command("docker", "ps", "-q", "--filter", "label=com.docker.compose.project="+project,
					"--filter", "label=com.docker.compose.service=db").Output()
				if err != nil || len(strings.Fields(string(container))) != 1 {
					return fmt.Errorf("the db container of %s: %q %v", project, container, err)
				}
				got, err := exec.Command("docker", "exec", strings.TrimSpace(string(container)),
					"psql", "-U", "postgres", "-Atc", "SELECT body FROM notes").CombinedOutput()
				if err != nil || string(got) != "written through the tunnel\n" {
					return fmt.Errorf("the sandbox's database holds %q (%v)", got, err)
				}
				return nil
			},
		}},
	})
}

// An sshd that refuses forwarding (AllowTcpForwarding no): the sandbox is
// made through it, and the tunnel to it fails saying which setting to
// change.
func TestAccTunnel_forwardingRefused(t *testing.T) {
	testAccPreCheck(t)
	testharness.RequireDocker(t)
	sshd := testharness.StartPrivateSSHD(t, "AllowTcpForwarding no")
	root := t.TempDir()
	h := accHostAt(t, root, "", "")
	config := privateSSHDConfig(t, sshd, "nofwd", root) + fmt.Sprintf(`
resource "sandboxer_sandbox" "web" {
  profile = "profile.compose-e2e"
  host    = "nofwd"
  inputs  = { repo = %q }
  env     = { BODY = "unreachable" }
}

ephemeral "sandboxer_tunnel" "web" {
  host       = "nofwd"
  sandbox_id = sandboxer_sandbox.web.id
  service    = "web"
  port       = 8080
}

resource "terraform_data" "fetch" {
  input = sandboxer_sandbox.web.id

  provisioner "local-exec" {
    command     = "busybox wget -q -O /dev/null \"http://$ADDR/\""
    environment = { ADDR = ephemeral.sandboxer_tunnel.web.address }
  }
}
`, webRepo(t))
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		TerraformVersionChecks:   ephemeralCLIs,
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             h.checkNothingLeft(t),
		Steps: []resource.TestStep{{
			Config:      config,
			ExpectError: wrapped(`Unable to Open Tunnel[\s\S]*refuses TCP forwarding[\s\S]*administratively prohibited[\s\S]*set AllowTcpForwarding yes`),
		}},
	})
}
