//go:build unix && !linux

package agent

import (
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// outputGone, for an agent run in a host's shell, is closed once the
// process that started it is gone. The shell kills its process group when
// its session ends (see gone_linux.go); the agent leaves that group first,
// and its parent's death is the signal. Where the agent is not on Linux
// (a macOS host driven from a macOS provider), poll cannot watch stdout for
// its reader going: it makes a poll without events into no kqueue filter
// at all, which never returns. Its parent, looked at every 100 ms, is
// what is left. The parent is read before the agent leaves the group:
// were the group killed before then, the agent died with it.
func outputGone(io.Writer) <-chan struct{} {
	done := make(chan struct{})
	parent := os.Getppid()
	// EPERM for a session leader (run by sshd directly, not from a shell),
	// which no shell's kill reaches anyway.
	_ = unix.Setpgid(0, 0)
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for range tick.C {
			if os.Getppid() != parent {
				gone(done)
				return
			}
		}
	}()
	return done
}
