//go:build unix && !linux

package checkpoint

import "syscall"

// syncStore flushes what this system has not yet written to disk (sync(2);
// no per-filesystem call here), so that every object a capture wrote is on
// disk before the manifest that names it.
func syncStore(string) error {
	syscall.Sync()
	return nil
}
