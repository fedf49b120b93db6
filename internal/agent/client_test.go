package agent

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

const ownPlatform = runtime.GOOS + "/" + runtime.GOARCH

func TestBinaryForChoosesTheHostsPlatform(t *testing.T) {
	self := filepath.Join(t.TempDir(), "terraform-provider-sandboxer") // where a provider runs from
	dir := t.TempDir()
	t.Setenv(AgentDirEnv, dir)
	write := func(p string) string {
		t.Helper()
		if err := os.WriteFile(p, []byte("agent"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	other := write(filepath.Join(dir, AgentFileName("plan9/386")))

	if got, err := agentBinary(self, "plan9/386"); err != nil || got != other {
		t.Fatalf("another platform: got %q, %v; want the agent from %s", got, err, AgentDirEnv)
	}
	if got, err := agentBinary(self, ownPlatform); err != nil || got != self {
		t.Fatalf("own platform without a standalone agent: got %q, %v; want the provider's executable", got, err)
	}
	// A standalone agent is preferred to the provider's executable, even
	// for the provider's own platform: beside the provider (as release
	// archives put it), and from the agent directory before that.
	beside := write(filepath.Join(filepath.Dir(self), AgentFileName(ownPlatform)))
	if got, err := agentBinary(self, ownPlatform); err != nil || got != beside {
		t.Fatalf("own platform with a standalone agent beside the provider: got %q, %v; want %s", got, err, beside)
	}
	own := write(filepath.Join(dir, AgentFileName(ownPlatform)))
	if got, err := agentBinary(self, ownPlatform); err != nil || got != own {
		t.Fatalf("own platform with a standalone agent in %s: got %q, %v; want %s", AgentDirEnv, got, err, own)
	}
	besideOther := write(filepath.Join(filepath.Dir(self), AgentFileName("plan9/amd64")))
	if got, err := agentBinary(self, "plan9/amd64"); err != nil || got != besideOther {
		t.Fatalf("another platform, agent beside the provider: got %q, %v; want %s", got, err, besideOther)
	}

	_, err := agentBinary(self, "plan9/arm")
	for _, want := range []string{"plan9/arm", filepath.Join(dir, "sandboxer-agent_plan9_arm"),
		filepath.Join(filepath.Dir(self), "sandboxer-agent_plan9_arm"), "GOOS=plan9 GOARCH=arm", AgentDirEnv + "=DIR"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("no agent for the platform: want an error mentioning %q, got %v", want, err)
		}
	}
	if got, err := binaryFor(ownPlatform); err != nil || got != own {
		t.Fatalf("binaryFor, from this executable: got %q, %v; want %s", got, err, own)
	}
}

func TestIsInstalledAgent(t *testing.T) {
	for name, want := range map[string]bool{
		"sandboxer-agent-0123456789abcdef":  true,
		"sandboxer-agent-0123456789abcde":   false, // too short
		"sandboxer-agent-0123456789abcdef0": false,
		"sandboxer-agent-0123456789ABCDEF":  false,
		"sandboxer-agent-0123456789abcdeg":  false,
		"sandboxer-agent_linux_amd64":       false,
		"other-0123456789abcdef":            false,
		"sandboxer-agent-../../0123456789a": false,
	} {
		if got := isInstalledAgent(name); got != want {
			t.Errorf("isInstalledAgent(%q) = %v, want %v", name, got, want)
		}
	}
}

// Installing an agent version removes the older versions from the host's
// agent directory, and nothing else there; a client whose agent was
// removed since (by a provider of another version) installs it again.
func TestInstallRemovesOlderAgents(t *testing.T) {
	h := testharness.SSHHost(t)
	t.Setenv(AgentDirEnv, "")
	bin := h.Path(".sandboxer", "bin")
	if err := os.MkdirAll(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	old := []string{"sandboxer-agent-0123456789abcdef", "sandboxer-agent-fedcba9876543210"}
	kept := []string{"sandboxer-agent-notours", "sandboxer-agent_linux_amd64", "README", "sandboxer-agent-0123456789ABCDEF"}
	for _, n := range append(append([]string{}, old...), kept...) {
		if err := os.WriteFile(filepath.Join(bin, n), []byte("#!/bin/sh\nexit 3\n"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := NewClient()
	if _, err := c.Snapshot(ctx, h, ws, nil, checkpoint.CaptureOptions{ID: "s1", Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	installed := c.installed[h.Host()]
	c.mu.Unlock()
	entries, err := os.ReadDir(bin)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := append([]string{filepath.Base(installed)}, kept...)
	slices.Sort(want)
	if !isInstalledAgent(filepath.Base(installed)) || !slices.Equal(names, want) {
		t.Fatalf("agent directory after installing %s: %v; want %v", installed, names, want)
	}

	// Another version's install removed this one: the next call installs it again.
	if err := os.Remove(installed); err != nil {
		t.Fatal(err)
	}
	if n, _, err := c.Usage(ctx, h); err != nil || n == 0 {
		t.Fatalf("usage after the agent was removed: %d, %v", n, err)
	}
	if _, err := os.Stat(installed); err != nil {
		t.Fatalf("the agent was not installed again: %v", err)
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
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "b.txt"), []byte("beta"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := NewClient()
	s, err := c.Snapshot(ctx, h, ws, nil, checkpoint.CaptureOptions{ID: "standalone-1", Name: "s", Now: time.Now()})
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

// A snapshot the agent does not find is a named result on its stdout, not
// an exit status: the client reports checkpoint.ErrNotFound.
func TestAgentAnswersNotFound(t *testing.T) {
	_, err := NewClient().Restore(t.Context(), testharness.LocalHost(t), "s1", t.TempDir(), nil, checkpoint.RestoreOptions{})
	if !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("restore of a missing snapshot: %v, want checkpoint.ErrNotFound", err)
	}
}
