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

func TestSSHPinnedHostKey(t *testing.T) {
	cfg := testharness.SSHConfig(t, "pinned", false)
	cfg.KnownHostsFile = ""
	cfg.HostKey = hostKey(t, false)
	if _, err := run(t, newSSH(t, cfg), "true"); err != nil {
		t.Fatalf("pinned correct key refused: %v", err)
	}
	cfg.HostKey = hostKey(t, true) // the other sshd's key
	_, err := run(t, newSSH(t, cfg), "true")
	if err == nil || !strings.Contains(err.Error(), "host key mismatch") {
		t.Fatalf("want a host key mismatch, got %v", err)
	}
}

func TestSSHUnknownHostKeyRefused(t *testing.T) {
	cfg := testharness.SSHConfig(t, "stranger", false)
	cfg.KnownHostsFile = filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(cfg.KnownHostsFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := run(t, newSSH(t, cfg), "true")
	if err == nil || !strings.Contains(err.Error(), "unknown host key") {
		t.Fatalf("want unknown host key, got %v", err)
	}
	// Opt-in only: insecure_ignore_host_key connects anyway.
	cfg.InsecureIgnoreHostKey = true
	cfg.KnownHostsFile = ""
	if _, err := run(t, newSSH(t, cfg), "true"); err != nil {
		t.Fatalf("insecure_ignore_host_key: %v", err)
	}
}

func TestSSHKnownHostsMismatch(t *testing.T) {
	cfg := testharness.SSHConfig(t, "moved", false)
	// A known_hosts that lists 2223's key for 2222: the host "was reinstalled".
	kh := filepath.Join(t.TempDir(), "known_hosts")
	line := fmt.Sprintf("[127.0.0.1]:%s %s\n", strings.Split(cfg.Address, ":")[1], hostKey(t, true))
	if err := os.WriteFile(kh, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.KnownHostsFile = kh
	_, err := run(t, newSSH(t, cfg), "true")
	if err == nil || !strings.Contains(err.Error(), "host key mismatch") {
		t.Fatalf("want host key mismatch, got %v", err)
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

func TestSSHThroughBastion(t *testing.T) {
	cfg := testharness.SSHConfig(t, "inner", false)
	bastion := testharness.SSHConfig(t, "jump", true)
	cfg.Bastion = &bastion
	before := testharness.SSHDAccepted(t, "SANDBOXER_TEST_SSHD_LOG2")
	out, err := run(t, newSSH(t, cfg), "echo via-bastion")
	if err != nil || out != "via-bastion\n" {
		t.Fatalf("got %q, %v", out, err)
	}
	time.Sleep(100 * time.Millisecond)
	if n := testharness.SSHDAccepted(t, "SANDBOXER_TEST_SSHD_LOG2") - before; n != 1 {
		t.Fatalf("the bastion saw %d logins, want 1", n)
	}
}
