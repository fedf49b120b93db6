//go:build linux

package checkpoint

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// syncStore flushes the filesystem that holds the store at dir
// (syncfs(2)): every object a capture wrote (by this process, or by a
// volume helper into the same directory) is on disk before the manifest
// that names it, which is synced itself. One call where an fsync of each
// object would cost one per file. A filesystem that cannot be flushed
// this way (some network and FUSE mounts) is not an error: the capture
// goes on, as restic's does.
func syncStore(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // only opened to name the filesystem
	err = unix.Syncfs(int(f.Fd()))
	if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) {
		return nil
	}
	return err
}
