//go:build unix

package checkpoint

import (
	"os"
	"path/filepath"
	"syscall"
)

// lock takes the store lock: shared while objects and a manifest are being
// written, exclusive for garbage collection. The kernel drops it when the
// process dies, so a killed capture never leaves the store locked.
func (s *Store) lock(exclusive bool) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(s.Dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
