//go:build !unix

package checkpoint

import (
	"errors"
	"io/fs"
	"os"
)

// readDirStat lists dir with each entry's lstat facts.
func readDirStat(dir string) ([]dirStat, error) {
	list, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make([]dirStat, 0, len(list))
	for _, d := range list {
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since the listing: not part of this snapshot
		}
		if err != nil {
			return nil, err
		}
		out = append(out, dirStat{name: d.Name(), mode: info.Mode(), size: info.Size(), mtimeNs: info.ModTime().UnixNano()})
	}
	return out, nil
}

// rootStat is dir's own mode; owners are not known here.
func rootStat(dir string) (mode fs.FileMode, uid, gid int, err error) {
	st, err := os.Lstat(dir)
	if err != nil {
		return 0, 0, 0, err
	}
	if !st.IsDir() {
		return 0, 0, 0, errors.New(dir + " is not a directory")
	}
	return st.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky), 0, 0, nil
}
