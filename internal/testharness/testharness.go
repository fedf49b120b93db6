// Package testharness connects tests to the real parts that
// scripts/harness/up.sh stands up: sshd instances on loopback and a docker
// engine. Tests skip when the harness is absent, unless
// SANDBOXER_REQUIRE_HARNESS=1 (set by CI), where absence is a failure.
package testharness

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

var loadOnce sync.Once

// load reads the harness env files into the process environment for any
// variable not already set, so `go test` works without sourcing it.
func load() {
	dir := harnessDir()
	// env is up.sh's; swarm_env and cluster/env, when there, swarm.sh's
	// and cluster.sh's.
	for _, name := range []string{"env", "swarm_env", filepath.Join("cluster", "env")} {
		loadFile(filepath.Join(dir, name))
	}
}

// harnessDir is where up.sh keeps the harness's files.
func harnessDir() string {
	if dir := os.Getenv("SANDBOXER_HARNESS_DIR"); dir != "" {
		return dir
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "sandboxer-harness")
}

func loadFile(path string) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer func() { _ = f.Close() }() // only read
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export ")
		name, value, ok := strings.Cut(line, "=")
		if !ok || os.Getenv(name) != "" {
			continue
		}
		// A name the environment cannot hold (an odd line) is skipped: Env
		// then reports that variable as unset, as it would without the file.
		_ = os.Setenv(name, strings.Trim(value, `"'`))
	}
}

// Env returns a harness variable, skipping (or failing under CI) the test
// when it is unset.
func Env(t testing.TB, name string) string {
	t.Helper()
	loadOnce.Do(load)
	v := os.Getenv(name)
	if v == "" {
		if os.Getenv("SANDBOXER_REQUIRE_HARNESS") == "1" {
			t.Fatalf("%s is not set: run scripts/harness/up.sh", name)
		}
		t.Skipf("%s is not set: run scripts/harness/up.sh to stand up the test harness", name)
	}
	return v
}

// SSHConfig returns the SSH settings of the harness's first sshd (or the
// second when second is true), verified against the harness known_hosts.
func SSHConfig(t testing.TB, name string, second bool) hosts.SSHConfig {
	t.Helper()
	addrVar := "SANDBOXER_TEST_SSH_ADDR"
	if second {
		addrVar = "SANDBOXER_TEST_SSH_ADDR2"
	}
	key, err := os.ReadFile(Env(t, "SANDBOXER_TEST_SSH_KEY"))
	if err != nil {
		t.Fatal(err)
	}
	return hosts.SSHConfig{
		Name:           name,
		Address:        Env(t, addrVar),
		User:           Env(t, "SANDBOXER_TEST_SSH_USER"),
		PrivateKey:     key,
		KnownHostsFile: Env(t, "SANDBOXER_TEST_KNOWN_HOSTS"),
	}
}

// SSHHost returns a Host on the harness sshd with a fresh root directory.
func SSHHost(t testing.TB) *hosts.Host {
	t.Helper()
	Share(t)
	tr, err := hosts.NewSSH(SSHConfig(t, "harness", false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() }) // best effort: the test is over
	return &hosts.Host{Transport: tr, RootDir: t.TempDir()}
}

// LocalHost returns a Host on this machine with a fresh root directory.
func LocalHost(t testing.TB) *hosts.Host {
	t.Helper()
	Share(t)
	return &hosts.Host{Transport: &hosts.Local{Name: "local"}, RootDir: t.TempDir(), Local: true}
}

// RequireDocker skips (or fails under CI) when no docker engine answers.
func RequireDocker(t testing.TB) {
	t.Helper()
	Share(t)
	Env(t, "SANDBOXER_TEST_IMAGE")
}

// Image is the locally built image compose fixtures use (nothing can be pulled).
func Image(t testing.TB) string { return Env(t, "SANDBOXER_TEST_IMAGE") }

// PGImage is the harness's PostgreSQL 15 image: its entrypoint makes a
// cluster on first start that trusts every connection, user postgres, and
// listens on every address of the container (port 5432).
func PGImage(t testing.TB) string { return Env(t, "SANDBOXER_TEST_PG_IMAGE") }

// ComposeRepo writes a compose project with the given services into a
// fresh directory and returns it. Each service runs the harness image;
// a service named "web" gets a healthcheck.
func ComposeRepo(t testing.TB, image string, services ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("services:\n")
	for _, s := range services {
		b.WriteString("  " + s + ":\n    image: " + image + "\n    command: [\"sh\", \"-c\", \"trap 'exit 0' TERM; while true; do sleep 1; done\"]\n")
		if s == "web" {
			b.WriteString("    healthcheck:\n      test: [\"CMD\", \"true\"]\n      interval: 1s\n      retries: 3\n")
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "docker-compose.yml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.txt"), []byte("fixture\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// ComposeLeftovers asks the docker engine (not the provider) what remains
// of compose projects: containers (running or stopped), networks and
// volumes carrying each project's label. A network or volume left without
// any container is found by its own label, not through a container. Only
// the projects named are looked at, so objects of other tests running on
// the same engine are not counted. Each leftover reads "<kind> <id>
// (<project>)"; docker not answering fails the test.
func ComposeLeftovers(t testing.TB, projects ...string) []string {
	t.Helper()
	var left []string
	for _, project := range projects {
		if project == "" {
			t.Fatal("ComposeLeftovers: empty compose project name")
		}
		filter := "label=com.docker.compose.project=" + project
		for _, q := range []struct {
			kind string
			args []string
		}{
			{"container", []string{"ps", "-aq", "--filter", filter}},
			{"network", []string{"network", "ls", "-q", "--filter", filter}},
			{"volume", []string{"volume", "ls", "-q", "--filter", filter}},
		} {
			out, err := exec.Command("docker", q.args...).Output()
			if err != nil {
				t.Fatalf("docker %s: %v", strings.Join(q.args, " "), err)
			}
			for _, id := range strings.Fields(string(out)) {
				left = append(left, q.kind+" "+id+" ("+project+")")
			}
		}
	}
	return left
}

// PrivateSSHD is an sshd of the test's own on a free loopback port, with
// the harness's host key and authorized keys, that the test can stop and
// start again (a host going away and coming back) without disturbing the
// harness's shared sshd instances.
type PrivateSSHD struct {
	t    testing.TB
	Addr string
	cfg  string
	log  string
	cmd  *exec.Cmd
}

// SFTPSubsystem is the sshd_config line serving sftp, as up.sh writes it.
// A private sshd has it unless a line of the caller's names a Subsystem.
const SFTPSubsystem = "Subsystem sftp /usr/lib/openssh/sftp-server"

// WithoutSFTP, among a private sshd's lines, leaves the sftp subsystem out
// (sshd reads it as a comment).
const WithoutSFTP = "# no Subsystem"

// StartPrivateSSHD starts one; it is stopped when the test ends. Extra
// sshd_config lines may be given.
func StartPrivateSSHD(t testing.TB, extra ...string) *PrivateSSHD {
	t.Helper()
	Share(t)
	key := Env(t, "SANDBOXER_TEST_SSH_KEY")
	state := filepath.Dir(key)
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil {
		Env(t, "SANDBOXER_TEST_NO_SSHD") // skips, or fails under CI
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // it only picked a free port
	dir := t.TempDir()
	s := &PrivateSSHD{t: t, Addr: addr, cfg: filepath.Join(dir, "sshd_config"), log: filepath.Join(dir, "sshd.log")}
	lines := append([]string{
		"ListenAddress " + addr,
		"HostKey " + filepath.Join(state, "ssh_host_ed25519_key_2222"),
		"AuthorizedKeysFile " + filepath.Join(state, "authorized_keys") + " .ssh/authorized_keys",
		"PidFile none", "PermitRootLogin prohibit-password", "PubkeyAuthentication yes",
		"PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no",
	}, extra...)
	if !slices.ContainsFunc(extra, func(l string) bool { return strings.Contains(l, "Subsystem") }) {
		lines = append(lines, SFTPSubsystem)
	}
	if err := os.WriteFile(s.cfg, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	s.Start()
	return s
}

// HostKey is the public key the private sshd presents (for host_key pinning).
func (s *PrivateSSHD) HostKey() string {
	data, err := os.ReadFile(Env(s.t, "SANDBOXER_TEST_HOST_KEY"))
	if err != nil {
		s.t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// Start starts sshd (again) and returns once it accepts connections.
func (s *PrivateSSHD) Start() {
	s.t.Helper()
	s.cmd = exec.Command("/usr/sbin/sshd", "-D", "-f", s.cfg, "-E", s.log)
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("sshd: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr, time.Second)
		if err == nil {
			_ = c.Close() // a probe: sshd accepts connections
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(s.log)
			s.t.Fatalf("sshd on %s did not come up: %v\n%s", s.Addr, err, log)
		}
		time.Sleep(20 * time.Millisecond) // polling a port that is not open yet
	}
}

// Stop stops sshd and every session it serves: the host is unreachable.
func (s *PrivateSSHD) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	// sshd -D forks a process per connection. The listener is stopped
	// first, so that it accepts no connection once its children are killed
	// (a client redialling at once would get a new child, which nothing
	// kills); then those children (their sessions end with them), then the
	// listener.
	_ = s.cmd.Process.Signal(syscall.SIGSTOP)
	_ = exec.Command("pkill", "-9", "-P", strconv.Itoa(s.cmd.Process.Pid)).Run()
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// SSHConfig is how to reach the private sshd, its host key pinned.
func (s *PrivateSSHD) SSHConfig(name string) hosts.SSHConfig {
	key, err := os.ReadFile(Env(s.t, "SANDBOXER_TEST_SSH_KEY"))
	if err != nil {
		s.t.Fatal(err)
	}
	return hosts.SSHConfig{Name: name, Address: s.Addr, User: Env(s.t, "SANDBOXER_TEST_SSH_USER"), PrivateKey: key, HostKey: s.HostKey()}
}

// Logged counts the lines of this sshd's log holding text, waiting up to
// 5 s for at least want of them: its log is its own, so nothing else on
// the machine adds to the count, but a session's process logs through
// sshd's monitor, a moment after the client has its answer.
func (s *PrivateSSHD) Logged(text string, want int) int {
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) { // polling the log
		data, err := os.ReadFile(s.log)
		if err != nil {
			s.t.Fatal(err)
		}
		if n := strings.Count(string(data), text); n >= want || time.Now().After(deadline) {
			return n
		}
	}
}

// Accepted counts the handshakes this sshd accepted. sshd logs one before
// it tells the client authentication succeeded.
func (s *PrivateSSHD) Accepted() int { return s.Logged("Accepted publickey", 0) }

// StatefulComposeRepo is a compose stack keeping its state in two named volumes:
// "pairs" is written continuously, a and b always with the same number
// (a consistent cut has them equal; $$ is compose's escaped $; a stop ends
// the loop after a whole pair, never between its two writes), "files" holds a file owned by
// 1234:1234, a setgid directory and a link to /etc, made once.
func StatefulComposeRepo(t testing.TB) string {
	image := Image(t)
	t.Helper()
	compose := `services:
  writer:
    image: ` + image + `
    command: ["sh", "-c", "trap 'stop=1' TERM; [ -f /pairs/config ] || echo original > /pairs/config; i=0; while [ -z \"$$stop\" ]; do i=$$((i+1)); echo $$i > /pairs/a; echo $$i > /pairs/b; usleep 2000; done"]
    volumes: ["pairs:/pairs"]
  keeper:
    image: ` + image + `
    command: ["sh", "-c", "trap 'exit 0' TERM; if [ ! -e /files/etc-link ]; then mkdir -p /files/shared && chmod 2775 /files/shared && echo owned > /files/shared/owned.txt && chown -R 1234:1234 /files/shared && ln -s /etc /files/etc-link; fi; touch /files/.ready; while true; do sleep 1; done"]
    volumes: ["files:/files"]
    healthcheck:
      test: ["CMD", "test", "-e", "/files/.ready"]
      interval: 1s
      retries: 30
volumes:
  pairs: {}
  files: {}
`
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "compose.yaml"), []byte(compose), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// InVolume runs a shell command in a throwaway container mounting the
// docker volume vol at /v: how a user looks into (or breaks) a volume.
func InVolume(t testing.TB, vol, script string) string {
	t.Helper()
	out, err := exec.Command("docker", "run", "--rm", "--network", "none", "-v", vol+":/v", Image(t), "sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("docker run on volume %s: %v: %s", vol, err, out)
	}
	return strings.TrimSpace(string(out))
}
