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
