//go:build !unix

package hosts

import "os/exec"

// ownGroup: no process groups here; cancellation kills the shell alone
// and WaitDelay bounds the wait for what it started.
func ownGroup(*exec.Cmd) {}
