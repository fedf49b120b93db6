//go:build linux

package checkpoint

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncStore flushes the filesystem that holds the store at dir
// (syncfs(2)): every object a capture wrote (by this process, or by a
// volume helper into the same directory) is on disk before the manifest
// that names it, which is synced itself. One call where an fsync of each
// object would cost one per file.
func syncStore(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // only opened to name the filesystem
	return unix.Syncfs(int(f.Fd()))
}
