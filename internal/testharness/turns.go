package testharness

import (
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// Test processes may share the harness (two suites at once, or a
// developer's run beside CI's; ADR 0013). Each test holds the harness
// shared (Share: the helpers that hand out its hosts, engine, swarm and
// cluster take it) for its run; a test whose checks or faults concern the
// whole engine, swarm, cluster or crontab (counting every network of a
// pool or every sandbox of the cluster, stopping a swarm node, putting the
// crontab back) holds it alone (Alone), waiting for the other processes'
// tests to end and holding theirs back meanwhile.
//
// Two flock(2) locks in the harness directory: the harness lock, and a
// turnstile taken on the way in, which a test waiting to be alone keeps
// so that new shared holders cannot starve it.
var turns struct {
	sync.Mutex
	harness, turnstile *os.File
	holder             testing.TB
	alone              bool
}

func openTurns(t testing.TB) {
	t.Helper()
	if turns.harness != nil {
		return
	}
	dir := harnessDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("harness directory: %v", err)
	}
	for _, f := range []struct {
		name string
		file **os.File
	}{{"harness.lock", &turns.harness}, {"turnstile.lock", &turns.turnstile}} {
		file, err := os.OpenFile(filepath.Join(dir, f.name), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatalf("harness lock: %v", err)
		}
		*f.file = file
	}
}

func flock(t testing.TB, f *os.File, how int) {
	t.Helper()
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			if err != nil {
				t.Fatalf("flock %s: %v", f.Name(), err)
			}
			return
		}
	}
}

// Share holds the harness shared until the test ends; while this process
// holds it (again in the test, or in a subtest) it does nothing.
func Share(t testing.TB) {
	t.Helper()
	turns.Lock()
	defer turns.Unlock()
	if turns.holder != nil {
		return
	}
	openTurns(t)
	flock(t, turns.turnstile, syscall.LOCK_EX)
	flock(t, turns.harness, syscall.LOCK_SH)
	flock(t, turns.turnstile, syscall.LOCK_UN)
	hold(t)
}

// Alone holds the harness alone until the test ends: no other test
// process's test runs meanwhile.
func Alone(t testing.TB) {
	t.Helper()
	turns.Lock()
	defer turns.Unlock()
	if turns.alone {
		return
	}
	openTurns(t)
	// Shared first (testAccPreCheck): let go before queueing, or two
	// processes each waiting to be alone would wait on each other.
	flock(t, turns.harness, syscall.LOCK_UN)
	flock(t, turns.turnstile, syscall.LOCK_EX)
	flock(t, turns.harness, syscall.LOCK_EX)
	turns.alone = true
	hold(t)
}

// hold lets go of the harness when the test that took it ends.
func hold(t testing.TB) {
	if turns.holder != nil {
		return
	}
	turns.holder = t
	t.Cleanup(func() {
		turns.Lock()
		defer turns.Unlock()
		flock(t, turns.harness, syscall.LOCK_UN)
		if turns.alone {
			flock(t, turns.turnstile, syscall.LOCK_UN)
		}
		turns.holder, turns.alone = nil, false
	})
}
