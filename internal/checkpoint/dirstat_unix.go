//go:build unix

package checkpoint

import (
	"fmt"
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
		if st.Mode&unix.S_ISUID != 0 {
			mode |= fs.ModeSetuid
		}
		if st.Mode&unix.S_ISGID != 0 {
			mode |= fs.ModeSetgid
		}
		if st.Mode&unix.S_ISVTX != 0 {
			mode |= fs.ModeSticky
		}
		out = append(out, dirStat{name: name, mode: mode, size: st.Size, mtimeNs: st.Mtim.Nano(), uid: int(st.Uid), gid: int(st.Gid)})
	}
	return out, nil
}

// rootStat is dir's own mode (with setuid, setgid and sticky bits) and owner.
func rootStat(dir string) (mode fs.FileMode, uid, gid int, err error) {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return 0, 0, 0, &fs.PathError{Op: "lstat", Path: dir, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return 0, 0, 0, fmt.Errorf("%s is not a directory", dir)
	}
	mode = fs.FileMode(st.Mode & 0o777)
	if st.Mode&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if st.Mode&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if st.Mode&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode, int(st.Uid), int(st.Gid), nil
}
