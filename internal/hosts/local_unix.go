//go:build unix

package hosts

import (
	"os/exec"
	"syscall"
)

// ownGroup runs cmd in a process group of its own, and makes its
// cancellation kill that group: what the script started goes with it, as
// a shell's watcher does on an SSH host.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
