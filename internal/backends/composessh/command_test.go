package composessh_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/composessh"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// On a host with compose v2, the detected command is the plugin binary
// itself, the one `docker compose` runs (same version), not the docker
// CLI that would start it.
func TestComposeIsItsPluginBinary(t *testing.T) {
	testharness.RequireDocker(t)
	want, err := exec.Command("docker", "compose", "version", "--short").Output()
	if err != nil {
		t.Skipf("this host has no compose v2: %v", err)
	}
	h := testharness.SSHHost(t)
	argv, err := composessh.New("").Compose(ctx(t), h)
	if err != nil {
		t.Fatal(err)
	}
	if len(argv) != 1 || !filepath.IsAbs(argv[0]) || filepath.Base(argv[0]) != "docker-compose" {
		t.Fatalf("compose command %q, want the absolute path of the docker-compose plugin", argv)
	}
	got, err := exec.Command(argv[0], "version", "--short").Output()
	if err != nil || strings.TrimSpace(string(got)) != strings.TrimSpace(string(want)) {
		t.Fatalf("%s version --short = %q (%v), docker compose's %q", argv[0], got, err, want)
	}
}
