package hosts

import (
	"bytes"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A command asked while the host is being warmed takes the warm-up's shell
// instead of starting a login shell of its own beside it; one asked after
// takes it idle.
func TestWarmStartsTheShellTheFirstCommandTakes(t *testing.T) {
	tr := startInProcessServer(t, nil).transport(t, 0)
	Warm(t.Context(), tr)
	var out bytes.Buffer
	if err := tr.Run(t.Context(), "echo first", nil, &out); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out.String()); got != "first" {
		t.Fatalf("output %q, want first", got)
	}
	if n := tr.shellsStarted.Load(); n != 1 {
		t.Fatalf("%d shells started for a warm-up and one command asked during it, want 1", n)
	}
	Warm(t.Context(), tr) // warm already: nothing more
	if err := tr.Run(t.Context(), "true", nil, nil); err != nil {
		t.Fatal(err)
	}
	if n := tr.shellsStarted.Load(); n != 1 {
		t.Fatalf("%d shells started, want still 1", n)
	}

	idle := startInProcessServer(t, nil).transport(t, 0)
	Warm(t.Context(), idle)
	waitUntil(t, func() bool { idle.mu.Lock(); defer idle.mu.Unlock(); return len(idle.idle) == 1 })
	if err := idle.Run(t.Context(), "true", nil, nil); err != nil {
		t.Fatal(err)
	}
	if n := idle.shellsStarted.Load(); n != 1 {
		t.Fatalf("%d shells started for a warm-up and one command after it, want 1", n)
	}
}

// A host that does not answer is dialled once for a warm-up and the
// command waiting for it: the command gets the warm-up's error, not a
// second dial and a second wait.
func TestWarmOfAHostThatDoesNotAnswerIsOneDial(t *testing.T) {
	mute, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mute.Close() })
	var accepted atomic.Int64
	go func() {
		for {
			c, err := mute.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			t.Cleanup(func() { _ = c.Close() })
		}
	}()
	cfg := startInProcessServer(t, nil).cfg
	cfg.Address, cfg.DialTimeout = mute.Addr().String(), 300*time.Millisecond
	tr, err := NewSSH(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	Warm(t.Context(), tr)
	err = tr.Run(t.Context(), "true", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "within 300ms") {
		t.Fatalf("a command on a host that does not answer: %v, want the dial's timeout", err)
	}
	if n := accepted.Load(); n != 1 {
		t.Fatalf("%d connections for a warm-up and one command, want 1", n)
	}
	// Once that failure is told, the next command tries again.
	if err := tr.Run(t.Context(), "true", nil, nil); err == nil {
		t.Fatal("a later command succeeded on a host that does not answer")
	}
	if n := accepted.Load(); n != 2 {
		t.Fatalf("%d connections after a later command, want 2", n)
	}
}
