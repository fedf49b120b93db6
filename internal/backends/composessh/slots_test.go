package composessh

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// A host's max_network_operations caps the engine operations run there at
// once, across commands (and provider processes) sharing its root: with
// both slots of a host capped at 2 held, a third operation waits (it is
// still waiting when timeout(1) ends it a second later), and once one is
// given back, the next takes it. Another root has slots of its own.
func TestNetworkSlotsCapAHost(t *testing.T) {
	e := New("")
	e.NetworkOperations["capped"] = 2
	capped := &hosts.Host{Transport: &hosts.Local{Name: "capped"}, RootDir: t.TempDir(), Local: true}
	other := &hosts.Host{Transport: &hosts.Local{Name: "other"}, RootDir: t.TempDir(), Local: true}
	// Two holders, each keeping its slot until the test releases it.
	release := holdSlots(t, e, capped, 2)

	third := "timeout 1 sh -c " + hosts.Quote(e.slotted(capped, "true"))
	var ce *hosts.CommandError
	if err := capped.Run(t.Context(), third, nil, nil); !errors.As(err, &ce) || ce.ExitCode != 124 {
		t.Fatalf("a third operation on a host capped at 2, both slots held: %v (want it still waiting after a second: timeout's 124)", err)
	}
	// The first slot of another root is free: it is another file.
	if err := other.Run(t.Context(), "timeout 5 sh -c "+hosts.Quote(e.takeSlot(other, false)+`[ "$_sbx_i" -eq 0 ]`), nil, nil); err != nil {
		t.Fatalf("another root's first slot: %v", err)
	}

	release(0)
	if err := capped.Run(t.Context(), "timeout 5 sh -c "+hosts.Quote(e.slotted(capped, "true")), nil, nil); err != nil {
		t.Fatalf("a slot given back was not taken: %v", err)
	}
	release(1)
}

// A command waiting for a slot takes whichever is given back first: with
// both slots of a host held, two commands wait (the first of them in the
// line, looking); once the second holder gives its slot back, both run
// through it, one after the other, while the first holder keeps its own.
func TestAWaiterTakesWhicheverSlotIsGivenBackFirst(t *testing.T) {
	e := New("")
	e.NetworkOperations["capped"] = 2
	capped := &hosts.Host{Transport: &hosts.Local{Name: "capped"}, RootDir: t.TempDir(), Local: true}
	release := holdSlots(t, e, capped, 2)

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	waiting := make(chan error, 2)
	for range 2 {
		go func() { waiting <- capped.Run(ctx, e.slotted(capped, "true"), nil, nil) }()
	}
	// The line is held once a waiter looks at the slots in turn.
	line := hosts.Quote(capped.Path(append(slotsDir, "line")...))
	for capped.Run(ctx, "[ -e "+line+" ] && ! flock -n "+line+" true", nil, nil) != nil {
		if ctx.Err() != nil {
			t.Fatal("no command waited in line for a slot")
		}
	}

	release(1)
	for range 2 {
		if err := <-waiting; err != nil {
			t.Fatalf("a waiter did not take the slot given back while the other was held: %v", err)
		}
	}
	release(0)
}

// A teardown whose deadline passes while it waits for a network slot
// says so, rather than naming a stuck engine: with the host's one slot
// held, the teardown of a sandbox with nothing on the engine stops
// nothing, waits, and gives up before its deadline naming the slot.
func TestATeardownOutwaitedForASlotSaysSo(t *testing.T) {
	testharness.RequireDocker(t)
	e := New("")
	e.NetworkOperations["capped"] = 1
	h := &hosts.Host{Transport: &hosts.Local{Name: "capped"}, RootDir: t.TempDir(), Local: true}
	release := holdSlots(t, e, h, 1)
	defer release(0)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	err := e.Teardown(ctx, h, &backends.Sandbox{ID: backends.NewID(), ComposeCommand: []string{"docker", "compose"}})
	if err == nil || !strings.Contains(err.Error(), `waited for one of host "capped"'s network slots`) || ctx.Err() != nil {
		t.Fatalf("a teardown out-waited for a slot: %v (deadline passed: %v; want it named before the deadline)", err, ctx.Err())
	}
	t.Log(err)
}

// holdSlots starts n commands on h, each holding one of its slots until
// release(i) gives the i-th back and waits for its end: each says it has
// its slot through a fifo of its own, which holdSlots waits on.
func holdSlots(t *testing.T, e *Extension, h *hosts.Host, n int) (release func(i int)) {
	t.Helper()
	dir := t.TempDir()
	holding := make([]chan error, n)
	for i := range holding {
		taken, gone := filepath.Join(dir, fmt.Sprint(i, ".taken")), filepath.Join(dir, fmt.Sprint(i, ".release"))
		for _, f := range []string{taken, gone} {
			if err := syscall.Mkfifo(f, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		holding[i] = make(chan error, 1)
		go func() {
			holding[i] <- h.Run(t.Context(), e.slotted(h, "echo taken >"+hosts.Quote(taken)+"; read _ <"+hosts.Quote(gone)), nil, nil)
		}()
		if _, err := os.ReadFile(taken); err != nil { // blocks until the holder has its slot
			t.Fatal(err)
		}
	}
	return func(i int) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(i, ".release")), []byte("go\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := <-holding[i]; err != nil {
			t.Fatalf("holder %d: %v", i, err)
		}
	}
}
