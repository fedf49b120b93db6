package testharness

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The other test process of turnsHolder: it holds the harness shared
// until its stdin closes, and says so on a file before letting go.
func TestTurnsHolder(t *testing.T) {
	released := os.Getenv("SANDBOXER_TURNS_RELEASED")
	if released == "" {
		t.Skip("the other process of TestAloneWaitsForAnotherProcess")
	}
	Share(t)
	_, _ = os.Stdout.WriteString("held\n")
	_, _ = io.Copy(io.Discard, os.Stdin)
	must(t, os.WriteFile(released, nil, 0o644))
}

// A test alone waits for another process's shared test to end, and lets
// go when it ends.
func TestAloneWaitsForAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SANDBOXER_HARNESS_DIR", dir)
	released := filepath.Join(dir, "released")
	stdin := holdElsewhere(t, released)

	t.Run("alone", func(t *testing.T) {
		Share(t)
		alone := make(chan struct{})
		go func() {
			defer close(alone)
			Alone(t)
		}()
		// Once this process waits for the lock (/proc/locks lists it), the
		// other one lets go.
		deadline := time.Now().Add(time.Minute)
		for !waitsForLock(t, os.Getpid()) {
			if time.Now().After(deadline) {
				t.Fatal("Alone never waited for the lock")
			}
			time.Sleep(10 * time.Millisecond)
		}
		select {
		case <-alone:
			t.Fatal("Alone returned while the other process held the harness")
		default:
		}
		must(t, stdin.Close())
		<-alone
		if _, err := os.Stat(released); err != nil {
			t.Fatalf("alone before the other process let go: %v", err)
		}
	})
	// The subtest has ended: another process shares the harness again.
	holdElsewhere(t, filepath.Join(dir, "released2"))
}

// holdElsewhere starts TestTurnsHolder in another process and returns once
// it holds the harness; closing the returned stdin lets it go.
func holdElsewhere(t *testing.T, released string) io.WriteCloser {
	t.Helper()
	other := exec.Command(os.Args[0], "-test.run=^TestTurnsHolder$", "-test.count=1")
	other.Env = append(os.Environ(), "SANDBOXER_TURNS_RELEASED="+released)
	stdin, err := other.StdinPipe()
	must(t, err)
	stdout, err := other.StdoutPipe()
	must(t, err)
	must(t, other.Start())
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "held\n" {
		t.Fatalf("the other process said %q (%v)", line, err)
	}
	return stdin
}

// waitsForLock says whether pid waits for a flock (a "->" line of
// /proc/locks).
func waitsForLock(t *testing.T, pid int) bool {
	t.Helper()
	locks, err := os.ReadFile("/proc/locks")
	must(t, err)
	for line := range strings.Lines(string(locks)) {
		f := strings.Fields(line)
		if len(f) > 5 && f[1] == "->" && f[2] == "FLOCK" && f[5] == strconv.Itoa(pid) {
			return true
		}
	}
	return false
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
