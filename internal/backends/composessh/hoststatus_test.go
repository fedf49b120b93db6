package composessh_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/composessh"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// Before the compose command is known, the host status script lists each
// engine the host has, and fails (so that every sandbox is inspected by
// itself, which detects compose and says why) when an engine's listing
// fails or there is no engine at all. Plain sh, engines as small scripts
// on an otherwise empty PATH: this tests the script's own logic.
func TestHostStatusScriptWithoutDetection(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	script, err := composessh.New("").HostStatusScript(t.Context(), &hosts.Host{Transport: &hosts.Local{}})
	if err != nil {
		t.Fatal(err)
	}
	run := func(engines map[string]string) (string, error) {
		bin := t.TempDir()
		for name, body := range engines {
			if err := os.WriteFile(filepath.Join(bin, name), []byte("#!"+sh+"\n"+body+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command(sh, "-c", script)
		cmd.Env = []string{"PATH=" + bin}
		out, err := cmd.Output()
		return string(out), err
	}
	if out, err := run(map[string]string{"docker": `echo "sbx-a|web|running|Up 1 second"`}); err != nil || out != "sbx-a|web|running|Up 1 second\n" {
		t.Errorf("docker only: %q, %v", out, err)
	}
	out, err := run(map[string]string{"docker": `echo "sbx-a|web|running|Up"`, "podman": `echo "sbx-b|db|exited|Exited (0)"`})
	if err != nil || !strings.Contains(out, "sbx-a|web") || !strings.Contains(out, "sbx-b|db") {
		t.Errorf("both engines: %q, %v", out, err)
	}
	if out, err := run(map[string]string{"podman": `echo "sbx-b|db|running|Up"`}); err != nil || out != "sbx-b|db|running|Up\n" {
		t.Errorf("podman only: %q, %v", out, err)
	}
	if _, err := run(map[string]string{"docker": `echo "Cannot connect to the Docker daemon" >&2; exit 1`}); err == nil {
		t.Error("an engine that cannot list: the script succeeded")
	}
	if _, err := run(nil); err == nil {
		t.Error("no engine: the script succeeded")
	}
	// Once the compose command is known, only its engine is asked.
	known, err := composessh.New("podman-compose").HostStatusScript(t.Context(), &hosts.Host{Transport: &hosts.Local{}})
	if err != nil || !strings.HasPrefix(known, "podman ps ") {
		t.Errorf("with podman-compose configured: %q, %v", known, err)
	}
}

// scripts is a host transport that keeps every script run through it:
// instrumentation of the real SSH transport, which still runs them.
type scripts struct {
	hosts.Transport
	mu  sync.Mutex
	ran []string
}

func (s *scripts) Run(ctx context.Context, script string, stdin io.Reader, stdout io.Writer) error {
	s.mu.Lock()
	s.ran = append(s.ran, script)
	s.mu.Unlock()
	return s.Transport.Run(ctx, script, stdin, stdout)
}

// The creates of one apply all need the compose command at once: a fresh
// process detects it once per host, not once per caller.
func TestComposeDetectedOncePerHost(t *testing.T) {
	testharness.RequireDocker(t)
	h := testharness.SSHHost(t)
	tr := &scripts{Transport: h.Transport}
	ch := &hosts.Host{Transport: tr, RootDir: h.RootDir}
	e := composessh.New("")
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		sb := &backends.Sandbox{ID: backends.NewID(), WorkspaceDir: filepath.Join(h.RootDir, "none"), ComposeProject: "sbx-none", Services: []string{"web"}}
		wg.Go(func() { _, errs[i] = e.Inspect(ctx(t), ch, sb) })
	}
	wg.Wait()
	detections := 0
	for _, s := range tr.ran {
		if strings.Contains(s, "docker compose version") {
			detections++
		}
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Inspect %d: %v", i, err)
		}
	}
	if detections != 1 {
		t.Errorf("%d concurrent inspects detected compose %d times, want once", n, detections)
	}
}
