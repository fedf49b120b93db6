//go:build unix

package checkpoint

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// readDirStat lists dir with each entry's lstat facts. It stats every name
// relative to the open directory (fstatat): the kernel then resolves one
// path element per call instead of the whole path from the root, which is a
// third of the scan of a deep workspace — and the scan is most of a capture
// after a small change.
func readDirStat(dir string) ([]dirStat, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer func() { _ = d.Close() }() // only read
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	fd := int(d.Fd())
	out := make([]dirStat, 0, len(names))
	var st unix.Stat_t
	for _, name := range names {
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if err == unix.ENOENT {
				continue // removed since the listing: not part of this snapshot
			}
			return nil, &fs.PathError{Op: "lstat", Path: dir + "/" + name, Err: err}
		}
		mode := fs.FileMode(st.Mode & 0o777)
		switch uint32(st.Mode) & unix.S_IFMT {
		case unix.S_IFREG:
		case unix.S_IFDIR:
			mode |= fs.ModeDir
		case unix.S_IFLNK:
			mode |= fs.ModeSymlink
		default:
			mode |= fs.ModeIrregular
		}
		out = append(out, dirStat{name: name, mode: mode, size: st.Size, mtimeNs: st.Mtim.Nano()})
	}
	return out, nil
}
