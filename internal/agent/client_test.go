package agent

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

const ownPlatform = runtime.GOOS + "/" + runtime.GOARCH

func TestBinaryForChoosesTheHostsPlatform(t *testing.T) {
	self, _ := os.Executable()
	dir := t.TempDir()
	t.Setenv(AgentDirEnv, dir)
	other := filepath.Join(dir, AgentFileName("plan9/386"))
	if err := os.WriteFile(other, []byte("agent"), 0o644); err != nil {
		t.Fatal(err)
	}

	if got, err := binaryFor("plan9/386"); err != nil || got != other {
		t.Fatalf("another platform: got %q, %v; want the agent from %s", got, err, AgentDirEnv)
	}
	if got, err := binaryFor(ownPlatform); err != nil || got != self {
		t.Fatalf("own platform without a standalone agent: got %q, %v; want this executable", got, err)
	}
	own := filepath.Join(dir, AgentFileName(ownPlatform))
	if err := os.WriteFile(own, []byte("agent"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := binaryFor(ownPlatform); err != nil || got != own {
		t.Fatalf("own platform with a standalone agent: got %q, %v; want %s", got, err, own)
	}

	_, err := binaryFor("plan9/arm")
	for _, want := range []string{"plan9/arm", filepath.Join(dir, "sandboxer-agent_plan9_arm"),
		filepath.Join(filepath.Dir(self), "sandboxer-agent_plan9_arm"), "GOOS=plan9 GOARCH=arm", AgentDirEnv + "=DIR"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("no agent for the platform: want an error mentioning %q, got %v", want, err)
		}
	}
}

// The standalone agent (cmd/sandboxer-agent), built for real, installed over
// SSH and used for a capture, in place of the provider's own executable.
func TestStandaloneAgentOverSSH(t *testing.T) {
	h := testharness.SSHHost(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, AgentFileName(ownPlatform))
	build := exec.Command("go", "build", "-o", bin, "github.com/sand-boxer/terraform-provider-sandboxer/cmd/sandboxer-agent")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Setenv(AgentDirEnv, dir)

	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha"), 0o644)
	os.WriteFile(filepath.Join(ws, "b.txt"), []byte("beta"), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := NewClient()
	s, err := c.Snapshot(ctx, h, ws, checkpoint.CaptureOptions{ID: "standalone-1", Name: "s", Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if s.FileCount != 2 || s.SizeBytes != 9 {
		t.Fatalf("snapshot through the standalone agent: %+v", s)
	}
	c.mu.Lock()
	digest := c.digests[bin]
	c.mu.Unlock()
	installed, _ := filepath.Glob(filepath.Join(h.RootDir, ".sandboxer", "bin", "sandboxer-agent-*"))
	if digest == "" || len(installed) != 1 || filepath.Base(installed[0]) != "sandboxer-agent-"+digest {
		t.Fatalf("want only the standalone agent (digest %q) installed, found %v", digest, installed)
	}
}
