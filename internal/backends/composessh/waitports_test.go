package composessh_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/composessh"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// wait_for_ports: a sandbox is ready only once its services accept
// connections on the ports they publish. One that starts listening late
// is waited for; one that never listens fails the create within its
// timeout, naming the service and port with its last log lines, and
// leaves nothing behind.
func TestWaitForPorts(t *testing.T) {
	testharness.RequireDocker(t)
	h := testharness.SSHHost(t)
	reg := backends.NewRegistry(composessh.New(os.Getenv("SANDBOXER_COMPOSE_CMD")))
	image := testharness.Image(t)
	repo := t.TempDir()
	// late listens after 2 s (the container runs at once); mute never does.
	compose := `services:
  late:
    image: ` + image + `
    ports: ["80"]
    command: ["sh", "-c", "mkdir -p /www && echo up > /www/index.html && sleep 2 && exec httpd -f -p 80 -h /www"]
  mute:
    image: ` + image + `
    ports: ["8081:81"]
    command: ["sh", "-c", "echo mute-is-up; trap 'exit 0' TERM; while true; do sleep 1; done"]
`
	if err := os.WriteFile(filepath.Join(repo, "compose.yaml"), []byte(compose), 0o644); err != nil {
		t.Fatal(err)
	}
	withMute := backends.Request{ID: backends.NewID(), Profile: profile(t), Host: h, Inputs: map[string]string{"repo": repo}, WaitForPorts: true}
	cctx, cancel := context.WithTimeout(context.Background(), 12*time.Second)
	defer cancel()
	_, err := reg.Create(cctx, withMute)
	if err == nil {
		t.Fatal("a service that never listens was taken for ready")
	}
	for _, want := range []string{`service "mute" never accepted a connection on port 81/tcp`, "mute-is-up"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	if left := leftovers(t, composessh.ProjectName(withMute.ID)); left != "" {
		t.Errorf("a failed create left: %s", left)
	}

	// Without mute: ready once late listens, not before.
	compose = strings.Split(compose, "  mute:")[0]
	if err := os.WriteFile(filepath.Join(repo, "compose.yaml"), []byte(compose), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	sb, err := reg.Create(ctx(t), backends.Request{ID: backends.NewID(), Profile: profile(t), Host: h, Inputs: map[string]string{"repo": repo}, WaitForPorts: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := reg.Destroy(ctx(t), h, sb.ID); err != nil {
			t.Error(err)
		}
	})
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("ready after %v, before late listened", took)
	}
	st := backends.ReadyStatus(sb)
	if len(st.Services) != 1 || len(st.Services[0].Ports) != 1 || st.Services[0].Ports[0].Target != 80 || st.Services[0].Ports[0].Published == 0 {
		t.Errorf("ready status %+v", st)
	}
}
