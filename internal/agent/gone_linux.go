//go:build linux

package agent

import (
	"io"
	"math"
	"os"

	"golang.org/x/sys/unix"
)

// outputGone, for an agent run in a host's shell, is closed once its
// stdout's reader is gone: the shell passes a command's output on through a
// cat in its process group, which dies with the group when the client
// closes the session (it gave up on the command) or the connection ends.
//
// The shell then kills its process group (SIGKILL: what a command must not
// outlive). The agent first leaves that group, so that it stops the way it
// does for a client that went away (no manifest written; a restore not yet
// applying leaves its target as it was, one applying completes) instead of
// dying wherever it is. Were the group killed before the agent left it, the
// agent died with it before doing anything.
//
// Output that is not a pipe or socket (a file, /dev/null) never ends: done
// is never closed.
func outputGone(stdout io.Writer) <-chan struct{} {
	done := make(chan struct{})
	f, ok := stdout.(*os.File)
	if !ok {
		return done
	}
	// EPERM for a session leader (run by sshd directly, not from a shell),
	// which no shell's kill reaches anyway.
	_ = unix.Setpgid(0, 0)
	fd := f.Fd()
	if fd > math.MaxInt32 {
		return done // not a descriptor poll can take; never the case for stdout
	}
	go func() {
		// No events asked for: poll reports only POLLERR (a pipe whose
		// reader closed) and POLLHUP (a socket whose peer closed).
		fds := []unix.PollFd{{Fd: int32(fd)}} //nolint:gosec // G115: bounded by MaxInt32 above
		for {
			n, err := unix.Poll(fds, -1)
			if err == unix.EINTR {
				continue
			}
			if err != nil || n > 0 && fds[0].Revents&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0 {
				break
			}
		}
		gone(done)
	}()
	return done
}
