package composefile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func loadRepo(t *testing.T, files map[string]string) (*Loaded, string) {
	t.Helper()
	repo, err := filepath.EvalSymlinks(writeRepo(t, files))
	if err != nil {
		t.Fatal(err)
	}
	l, err := LoadFile(repo, "compose.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	return l, repo
}

func messages(errs []error) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString(e.Error() + "\n")
	}
	return b.String()
}

// Each baseline control refuses what it names, and a file that breaks them
// all gets every refusal at once, one error each, naming the service, the
// key and the value at its line. Trusted refuses nothing.
func TestPolicyBaselineRefusesEachControlAtOnce(t *testing.T) {
	compose := `services:
  a:
    image: busybox
    privileged: true
    pid: host
    ipc: host
    uts: host
    userns_mode: host
    network_mode: "container:elsewhere"
    cap_add: [SYS_ADMIN, CHOWN]
    devices: ["/dev/kmsg"]
    device_cgroup_rules: ["c 1:3 mr"]
    security_opt: ["seccomp=unconfined", "apparmor:unconfined", "label=disable", "systempaths=unconfined"]
    sysctls: {kernel.msgmax: "65536", net.ipv4.tcp_syncookies: "1"}
    cgroup_parent: machine.slice
    runtime: runsc
    env_file: [../secrets.env]
    volumes:
      - /:/host
      - /var/run/docker.sock:/var/run/docker.sock
      - ./src:/src
      - data:/data
      - nfs:/nfs
    volumes_from: ["container:db-elsewhere"]
  b:
    image: busybox
    network_mode: host
    cgroup: host
volumes:
  data: {}
  nfs:
    driver_opts: {type: none, o: bind, device: /etc}
  shared: {external: true, name: team-cache}
networks:
  lan: {driver: macvlan}
  outside: {external: true, name: corp}
secrets:
  key: {file: ../../id_rsa}
`
	l, repo := loadRepo(t, map[string]string{"compose.yaml": compose, "src/x": "x"})
	for link, target := range map[string]string{"src/passwd": "/etc/passwd", "s": ".", "a": "s/..", "src/inside": "x"} {
		if err := os.Symlink(target, filepath.Join(repo, link)); err != nil {
			t.Fatal(err)
		}
	}
	if errs := l.CheckPolicy(Policy{Level: Trusted}, repo, true); errs != nil {
		t.Fatalf("trusted refused: %s", messages(errs))
	}
	errs := l.CheckPolicy(Policy{Level: Baseline}, repo, true)
	got := messages(errs)
	for _, want := range []string{
		`line 4: service "a": privileged: true`,
		`line 5: service "a": pid: host`,
		`line 6: service "a": ipc: host`,
		`line 7: service "a": uts: host`,
		`line 8: service "a": userns_mode: host`,
		`service "a": network_mode: container:elsewhere joins a container outside the sandbox`,
		`service "a": cap_add SYS_ADMIN is beyond`,
		`service "a": devices`,
		`service "a": device_cgroup_rules`,
		`security_opt "seccomp=unconfined"`,
		`security_opt "apparmor:unconfined"`,
		`security_opt "label=disable"`,
		`security_opt "systempaths=unconfined"`,
		`sysctls kernel.msgmax`,
		`cgroup_parent "machine.slice"`,
		`runtime "runsc"`,
		`env_file`,
		`bind mount / is outside the repo`,
		`bind mount /var/run/docker.sock is a container engine's socket`,
		`volumes_from container:db-elsewhere`,
		`service "b": network_mode: host`,
		`service "b": cgroup: host`,
		`volume "nfs" is backed by device "/etc"`,
		`volume "shared" is external ("team-cache")`,
		`network "lan": driver "macvlan"`,
		`network "outside" is external ("corp")`,
		`secret "key": file`,
		`symlink src/passwd points to /etc/passwd`,
		`symlink a points to s/..`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no finding %q in:\n%s", want, got)
		}
	}
	for _, allowed := range []string{"CHOWN", "tcp_syncookies", "./src", "/src is outside", `volume "data"`, "symlink s ", "src/inside"} {
		if strings.Contains(got, allowed) {
			t.Errorf("refused %q, which baseline allows:\n%s", allowed, got)
		}
	}
	if !strings.Contains(got, `(refused by policy "baseline")`) {
		t.Errorf("the findings do not name the policy:\n%s", got)
	}

	// What the host block allows by name is allowed.
	errs = l.CheckPolicy(Policy{Level: Baseline, Runtimes: []string{"runsc"}, ExternalNetworks: []string{"corp"}, ExternalVolumes: []string{"team-cache"}}, repo, true)
	if got := messages(errs); strings.Contains(got, "runsc") || strings.Contains(got, "corp") || strings.Contains(got, "team-cache") {
		t.Errorf("allowed runtime or external resources refused:\n%s", got)
	}
}

// A bind mount that climbs out with `..` or starts at the host user's home
// is outside, whatever it resolves to here.
func TestPolicyBindMountsOutsideTheRepo(t *testing.T) {
	l, repo := loadRepo(t, map[string]string{"compose.yaml": `services:
  a:
    image: busybox
    volumes: ["./src/../../up:/up", "~/.ssh:/ssh", "./ok:/ok", {type: bind, source: /run, target: /r}]
`})
	got := messages(l.CheckPolicy(Policy{Level: Baseline}, repo, true))
	for _, want := range []string{"/up is outside", "~/.ssh is outside", "/run is a container engine's socket"} {
		if !strings.Contains(got, want) {
			t.Errorf("no finding %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "/ok") {
		t.Errorf("a mount inside the repo is refused:\n%s", got)
	}
}

// Restricted adds a non-root user and every capability dropped (but
// NET_BIND_SERVICE); what the file leaves out of cap_drop and
// no-new-privileges the rendering adds, and the rendering runs.
func TestPolicyRestricted(t *testing.T) {
	l, repo := loadRepo(t, map[string]string{"compose.yaml": `services:
  root:
    image: busybox
    cap_add: [NET_BIND_SERVICE, NET_RAW]
  dropsome:
    image: busybox
    user: "0:0"
    cap_drop: [NET_RAW]
  nnp:
    image: busybox
    user: app
    security_opt: ["no-new-privileges:false"]
  good:
    image: busybox
    user: "1000:1000"
    security_opt: ["label=type:container_t"]
`})
	got := messages(l.CheckPolicy(Policy{Level: Restricted}, repo, true))
	for _, want := range []string{
		`service "root": user "": the restricted policy requires a non-root user`,
		`service "root": cap_add NET_RAW: only NET_BIND_SERVICE`,
		`service "dropsome": user "0:0"`,
		`service "dropsome": cap_drop NET_RAW`,
		`service "nnp": security_opt "no-new-privileges:false"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no finding %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, `"good"`) || strings.Contains(got, "NET_BIND_SERVICE:") {
		t.Errorf("refused what restricted allows:\n%s", got)
	}

	out, err := l.Isolate(IsolateOptions{Project: "sbx-abc", Rules: Rules{Policy: Policy{Level: Restricted}}})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]struct {
			CapDrop     []string `yaml:"cap_drop"`
			SecurityOpt []string `yaml:"security_opt"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	good := doc.Services["good"]
	if strings.Join(good.CapDrop, ",") != "ALL" || strings.Join(good.SecurityOpt, ",") != "label=type:container_t,no-new-privileges:true" {
		t.Errorf("good is rendered with cap_drop %v, security_opt %v", good.CapDrop, good.SecurityOpt)
	}
	if d := doc.Services["dropsome"]; strings.Join(d.CapDrop, ",") != "NET_RAW" {
		t.Errorf("a cap_drop the file writes is changed: %v", d.CapDrop)
	}
	if n := doc.Services["nnp"]; strings.Join(n.SecurityOpt, ",") != "no-new-privileges:false" {
		t.Errorf("a no-new-privileges the file writes is changed: %v", n.SecurityOpt)
	}
	if got := Hardened(l.Project.Services["good"]); strings.Join(got, "; ") != "cap_drop: [ALL]; security_opt: no-new-privileges:true" {
		t.Errorf("Hardened(good) = %v", got)
	}
	if err := os.WriteFile(filepath.Join(repo, ".rendered.yaml"), out, 0o600); err != nil {
		t.Fatal(err)
	}
	composeAccepts(t, repo, ".rendered.yaml")
}

func TestLevels(t *testing.T) {
	for _, c := range []struct {
		a, b, stricter Level
	}{
		{Trusted, Baseline, Baseline}, {Restricted, Baseline, Restricted}, {"", Trusted, Trusted}, {"", "", Trusted}, {Baseline, "", Baseline},
	} {
		if got := c.a.Stricter(c.b); got != c.stricter {
			t.Errorf("%q.Stricter(%q) = %q, want %q", c.a, c.b, got, c.stricter)
		}
	}
	if Trusted.AtLeast(Baseline) || !Restricted.AtLeast(Baseline) || !Level("").AtLeast(Trusted) {
		t.Error("AtLeast orders the levels wrongly")
	}
}

// What compose adds beyond the Pod Security Standards is refused too: the
// API socket and host programs, a build's host access, and variables the
// host's own environment would fill in.
func TestPolicyBaselineComposeAdditions(t *testing.T) {
	l, repo := loadRepo(t, map[string]string{".env": "TAG=1\nHOME=/safe\n", "compose.yaml": `services:
  sock:
    image: busybox:${TAG}
    use_api_socket: true
    volumes: ["${HOME}/x:/h", "${SSH_AUTH_SOCK:-./a}:/agent", "${UNSET:-.}:/u"]
  builder:
    image: b
    build:
      context: .
      network: host
      privileged: true
      ssh: [default]
      additional_contexts: {etc: /etc}
  sel:
    image: busybox
    security_opt: [disable]
`, "Dockerfile": "FROM scratch\n"})
	got := messages(l.CheckPolicy(Policy{Level: Baseline}, repo, true))
	for _, want := range []string{
		`use_api_socket mounts the Docker socket`,
		`build.network: host`, `build.privileged`, `build.ssh`, `build.additional_contexts etc is /etc`,
		`security_opt "disable" disables SELinux`,
		`variable HOME is the host's own`, `variable SSH_AUTH_SOCK is the host's own`, `variable UNSET is not set`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no finding %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "variable TAG") {
		t.Errorf("a variable the .env sets is refused:\n%s", got)
	}
}

// Root and privilege escalation in the forms Docker accepts are refused
// under restricted.
func TestPolicyRestrictedParsesAsDockerDoes(t *testing.T) {
	l, repo := loadRepo(t, map[string]string{"compose.yaml": `services:
  zeros:
    image: busybox
    user: "00"
    cap_drop: [ALL]
  plus:
    image: busybox
    user: "+0:0"
    cap_drop: [ALL]
  nnp:
    image: busybox
    user: "1000"
    cap_drop: [ALL]
    security_opt: ["no-new-privileges:0"]
`})
	got := messages(l.CheckPolicy(Policy{Level: Restricted}, repo, true))
	for _, want := range []string{`service "zeros": user "00"`, `service "plus": user "+0:0"`, `service "nnp": security_opt "no-new-privileges:0"`} {
		if !strings.Contains(got, want) {
			t.Errorf("no finding %q in:\n%s", want, got)
		}
	}
}
