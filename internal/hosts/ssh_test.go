package hosts_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

func run(t *testing.T, tr hosts.Transport, script string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := hosts.Output(ctx, tr, script)
	return string(out), err
}

func newSSH(t *testing.T, cfg hosts.SSHConfig) *hosts.SSH {
	t.Helper()
	tr, err := hosts.NewSSH(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

func hostKey(t *testing.T, port2 bool) string {
	t.Helper()
	path := testharness.Env(t, "SANDBOXER_TEST_HOST_KEY")
	if port2 {
		path = strings.Replace(path, "2222", "2223", 1)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// A host's key is checked against host_key when it is pinned, else against
// known_hosts; insecure_ignore_host_key alone skips the check.
func TestSSHHostKeys(t *testing.T) {
	knownHosts := func(content string) string {
		p := filepath.Join(t.TempDir(), "known_hosts")
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	port := strings.Split(testharness.SSHConfig(t, "", false).Address, ":")[1]
	for _, c := range []struct {
		name, hostKey, knownHosts, wantErr string
		insecure                           bool
	}{
		{name: "pinned", hostKey: hostKey(t, false)},
		{name: "pinned, the other sshd's", hostKey: hostKey(t, true), wantErr: "host key mismatch"},
		{name: "not in known_hosts", knownHosts: knownHosts(""), wantErr: "unknown host key"},
		{name: "insecure_ignore_host_key", insecure: true},
		// 2223's key listed for 2222: the host "was reinstalled".
		{name: "another key in known_hosts", knownHosts: knownHosts(fmt.Sprintf("[127.0.0.1]:%s %s\n", port, hostKey(t, true))), wantErr: "host key mismatch"},
	} {
		cfg := testharness.SSHConfig(t, c.name, false)
		cfg.HostKey, cfg.KnownHostsFile, cfg.InsecureIgnoreHostKey = c.hostKey, c.knownHosts, c.insecure
		if _, err := run(t, newSSH(t, cfg), "true"); c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.wantErr)
		}
	}
}

func TestSSHUnreachableAndBadKey(t *testing.T) {
	cfg := testharness.SSHConfig(t, "nowhere", false)
	cfg.Address = "127.0.0.1:1"
	cfg.DialTimeout = 3 * time.Second
	_, err := run(t, newSSH(t, cfg), "true")
	if err == nil || !strings.Contains(err.Error(), `host "nowhere": unable to connect to 127.0.0.1:1`) {
		t.Fatalf("got %v", err)
	}
	cfg = testharness.SSHConfig(t, "badkey", false)
	cfg.PrivateKey = []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nnot a key\n-----END OPENSSH PRIVATE KEY-----\n")
	if _, err := hosts.NewSSH(cfg); err == nil || !strings.Contains(err.Error(), "unable to parse private key") {
		t.Fatalf("got %v", err)
	}
}

// The bastion (an sshd of the test's own, so that its log is the test's)
// is logged in to once.
func TestSSHThroughBastion(t *testing.T) {
	cfg := testharness.SSHConfig(t, "inner", false)
	jump := testharness.StartPrivateSSHD(t)
	bastion := jump.SSHConfig("jump")
	cfg.Bastion = &bastion
	out, err := run(t, newSSH(t, cfg), "echo via-bastion")
	if err != nil || out != "via-bastion\n" {
		t.Fatalf("got %q, %v", out, err)
	}
	if n := jump.Accepted(); n != 1 {
		t.Fatalf("the bastion saw %d logins, want 1", n)
	}
}
