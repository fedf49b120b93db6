package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// The agent runs in the host's shell (its request on the command line, as
// runAgent sends a small one) and the provider gives up on it while the
// capture is provably mid-way: the context ends, the shell's session is
// closed and the shell kills its process group. The agent is not killed
// where it stands: it sees its client go, stops and writes no manifest.
// Were it still in the shell's group it would die at once and never say it
// saw the client go.
func TestCaptureInAShellStopsWhenTheSessionEnds(t *testing.T) {
	h := testharness.SSHHost(t) // this machine, over sshd: the test binary is the agent there too
	ws, aside := t.TempDir(), t.TempDir()
	store := filepath.Join(t.TempDir(), "store")
	for i := range 20 {
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%02d", i)), []byte(fmt.Sprintf("content of file %02d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reached, release, gone, exited := filepath.Join(aside, "reached"), filepath.Join(aside, "release"), filepath.Join(aside, "gone"), filepath.Join(aside, "exited")
	for _, p := range []string{reached, release, gone, exited} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	req, err := json.Marshal(Request{Store: store, Workspace: ws, Capture: checkpoint.CaptureOptions{ID: "snap-1", Now: time.Now(), Workers: 1}})
	if err != nil {
		t.Fatal(err)
	}
	// The agent holds the FIFO "exited" open for writing (fd 9) until it
	// exits: reading it to its end waits for that. The shell opens it
	// before the agent starts. Its stderr goes to a file: the session's is
	// gone with the session.
	stderr := filepath.Join(aside, "stderr")
	script := pauseEnv + "=" + hosts.Quote(pausedAt+":"+reached+":"+release) + " " +
		goneFIFOEnv + "=" + hosts.Quote(gone) + " " +
		hosts.Command(os.Args[0], Command, "snapshot", string(req)) + " 9>" + hosts.Quote(exited) + " 2>" + hosts.Quote(stderr)
	// Should the test fail with the agent held at f10, let it go on: it is
	// not the test's child, nothing else would end it.
	t.Cleanup(func() {
		if f, err := os.OpenFile(release, os.O_RDWR|syscall.O_NONBLOCK, 0); err == nil {
			_ = f.Close() // opened only to unblock the agent's open
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &agentRun{exited: make(chan error, 1)}
	go func() { r.exited <- h.Run(ctx, script, nil, io.Discard) }()
	exitedEnd := r.openFIFOEnd(t, exited, os.O_RDONLY)
	defer func() { _ = exitedEnd.Close() }()     // only read
	at := r.openFIFOEnd(t, reached, os.O_RDONLY) // the capture is at f10
	if _, err := io.ReadAll(at); err != nil {
		t.Fatal(err)
	}
	_ = at.Close() // only read

	cancel() // the provider gives up on the command
	if err := <-r.exited; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after its context ended: %v", err)
	}
	// The agent has seen its client go (clientGone) before the capture may
	// go on past f10 ...
	alive := &agentRun{exited: make(chan error)} // nothing to wait for: the agent is not the test's child
	g := alive.openFIFOEnd(t, gone, os.O_RDONLY)
	if b, err := io.ReadAll(g); err != nil || !strings.Contains(string(b), "gone") {
		t.Fatalf("the agent did not say its client went: %q, %v", b, err)
	}
	_ = g.Close() // only read
	_ = alive.openFIFOEnd(t, release, os.O_WRONLY).Close()
	// ... and it stops: it exits without a manifest.
	done := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, exitedEnd); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the agent did not exit after its client went away")
	}
	if b, err := os.ReadFile(stderr); err != nil || !strings.Contains(string(b), "aborted") {
		t.Fatalf("the agent stopped for another reason than its client going: %q, %v", b, err)
	}
	checkStoreTrustworthy(t, store)
}

// A request goes on the agent's command line only when it is small and
// carries nothing secret: env values and manifests (a cross-host restore's)
// go on stdin, since every user of a host can read command lines.
func TestRequestInArgsOnlyWhenSmallAndWithoutSecrets(t *testing.T) {
	small := Request{Store: "/srv/.sandboxer/store", Workspace: "/srv/sbx-1", Capture: checkpoint.CaptureOptions{ID: "snap-1"}}
	cases := []struct {
		name  string
		local bool
		req   Request
		want  bool
	}{
		{"small, remote", false, small, true},
		{"local host", true, small, false},
		{"env values", false, Request{Store: small.Store, Env: map[string]string{"TOKEN": "s3cret"}}, false},
		{"inline manifest", false, Request{Store: small.Store, Manifest: &checkpoint.Manifest{}}, false},
		{"large", false, Request{Store: small.Store, Digests: make([]string, argRequestMax)}, false},
	}
	for _, c := range cases {
		body, err := json.Marshal(c.req)
		if err != nil {
			t.Fatal(err)
		}
		if got := requestInArgs(c.local, c.req, body); got != c.want {
			t.Errorf("%s: in args %v, want %v", c.name, got, c.want)
		}
	}
}
