//go:build unix

// Package filelock is the one advisory file lock (flock) the provider uses:
// for the checkpoint store on hosts and the credits ledger on the client.
// The kernel drops a lock when its process dies, so a killed process never
// leaves a file locked.
package filelock

import (
	"os"
	"syscall"
)

// Lock takes a shared (or exclusive) lock on path, creating it if needed,
// and returns the function that releases it.
func Lock(path string, exclusive bool) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		_ = f.Close() // a lock file, never written
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close() // closing releases the lock too
	}, nil
}
