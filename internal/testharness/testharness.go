// Package testharness connects tests to the real parts that
// scripts/harness/up.sh stands up: sshd instances on loopback and a docker
// engine. Tests skip when the harness is absent, unless
// SANDBOXER_REQUIRE_HARNESS=1 (set by CI), where absence is a failure.
package testharness

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

var loadOnce sync.Once

// load reads the harness env file into the process environment for any
// variable not already set, so `go test` works without sourcing it.
func load() {
	dir := os.Getenv("SANDBOXER_HARNESS_DIR")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "sandboxer-harness")
	}
	f, err := os.Open(filepath.Join(dir, "env"))
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export ")
		name, value, ok := strings.Cut(line, "=")
		if !ok || os.Getenv(name) != "" {
			continue
		}
		os.Setenv(name, strings.Trim(value, `"'`))
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
	tr, err := hosts.NewSSH(SSHConfig(t, "harness", false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return &hosts.Host{Transport: tr, RootDir: t.TempDir()}
}

// LocalHost returns a Host on this machine with a fresh root directory.
func LocalHost(t testing.TB) *hosts.Host {
	t.Helper()
	return &hosts.Host{Transport: &hosts.Local{Name: "local"}, RootDir: t.TempDir(), Local: true}
}

// RequireDocker skips (or fails under CI) when no docker engine answers.
func RequireDocker(t testing.TB) {
	t.Helper()
	Env(t, "SANDBOXER_TEST_IMAGE")
}

// Image is the locally built image compose fixtures use (nothing can be pulled).
func Image(t testing.TB) string { return Env(t, "SANDBOXER_TEST_IMAGE") }

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

// SSHDAccepted counts "Accepted publickey" lines in an sshd log: one per
// handshake the provider made.
func SSHDAccepted(t testing.TB, logVar string) int {
	t.Helper()
	data, err := os.ReadFile(Env(t, logVar))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "Accepted publickey")
}
