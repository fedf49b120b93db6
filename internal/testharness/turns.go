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

// openTurns opens the two locks once per process; false when there is no
// harness directory (no harness: nothing to share, and nothing is made) or
// the locks cannot be opened, and the test then runs without them.
func openTurns(t testing.TB) bool {
	t.Helper()
	if turns.harness != nil {
		return true
	}
	dir := harnessDir()
	if _, err := os.Stat(dir); err != nil {
		return false
	}
	var files [2]*os.File
	for i, name := range []string{"harness.lock", "turnstile.lock"} {
		file, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Logf("not taking turns with other test processes: %v", err)
			return false
		}
		files[i] = file
	}
	turns.harness, turns.turnstile = files[0], files[1]
	return true
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
	if turns.holder != nil || !openTurns(t) {
		return
	}
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
	if turns.alone || !openTurns(t) {
		return
	}
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
