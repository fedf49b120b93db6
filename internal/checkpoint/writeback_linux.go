//go:build linux

package checkpoint

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing f's data to disk now
// and returns at once (sync_file_range(2), SYNC_FILE_RANGE_WRITE: no wait,
// no flush of metadata). Only a hint: a failure changes nothing of the
// restore, which is no more and no less durable for it.
func startWriteback(f *os.File) {
	_ = unix.SyncFileRange(int(f.Fd()), 0, 0, unix.SYNC_FILE_RANGE_WRITE)
}
