package checkpoint

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"unicode/utf8"
)

// scan lists the workspace entries in scope, without reading file contents,
// in manifest order (sorted by path).
//
// Directories are read concurrently, a bounded number at a time: after a
// small change the scan is most of a capture, and it is all system calls.
// Each directory's result stays in a tree node, and the tree is flattened in
// path order at the end, so the manifest needs no sort of its own.
//
// With owners (a volume), each entry also records its owner and its
// setuid, setgid and sticky bits.
func scan(workspace string, f Filter, owners bool) ([]Entry, error) {
	st, err := os.Stat(workspace)
	if err != nil || !st.IsDir() {
		return nil, fmt.Errorf("workspace %s is not a directory: %v", workspace, err)
	}
	var (
		mu       sync.Mutex
		firstErr error
		count    int
		wg       sync.WaitGroup
		slots    = make(chan struct{}, scanParallelism)
	)
	var walk func(dir, rel string, n *scanNode)
	walk = func(dir, rel string, n *scanNode) {
		defer wg.Done()
		slots <- struct{}{}
		err := n.read(dir, rel, f, owners)
		<-slots
		mu.Lock()
		if err != nil && firstErr == nil {
			firstErr = err
		}
		count += len(n.entries)
		mu.Unlock()
		if err != nil {
			return // the scan fails: nothing below this directory is needed
		}
		for i, key := range n.subdirKeys {
			n.subdirs[i] = &scanNode{}
			wg.Add(1)
			sub := key[:len(key)-1]
			go walk(filepath.Join(dir, filepath.Base(sub)), sub, n.subdirs[i])
		}
	}
	root := &scanNode{}
	wg.Add(1)
	walk(workspace, "", root)
	wg.Wait()
	if firstErr != nil {
		return nil, fmt.Errorf("unable to scan workspace %s: %w", workspace, firstErr)
	}
	return root.flatten(make([]Entry, 0, count)), nil
}

// scanParallelism bounds the directories read at once.
const scanParallelism = 4

// scanNode is one directory's part of the scan.
type scanNode struct {
	entries    []Entry     // in scope, sorted by path
	subdirKeys []string    // relative paths, each with a trailing "/", sorted
	subdirs    []*scanNode // what their walks found, in the same order
}

// flatten appends the subtree's entries in path order. Among siblings, the
// entries of a directory's subtree sort where its path plus "/" does: "a"
// (the directory itself), then "a.txt", then "a/x", since '.' < '/'.
func (n *scanNode) flatten(out []Entry) []Entry {
	i, j := 0, 0
	for i < len(n.entries) || j < len(n.subdirKeys) {
		if j == len(n.subdirKeys) || (i < len(n.entries) && n.entries[i].Path < n.subdirKeys[j]) {
			out = append(out, n.entries[i])
			i++
			continue
		}
		out = n.subdirs[j].flatten(out)
		j++
	}
	return out
}

// dirStat is one directory entry with its lstat facts (readDirStat).
type dirStat struct {
	name    string
	mode    fs.FileMode
	size    int64
	mtimeNs int64
	// Owner numbers: where the platform has none (dirstat_other.go), 0.
	uid, gid int
}

// read lists one directory: its in-scope entries, and the subdirectories
// the walk must descend into.
func (n *scanNode) read(dir, rel string, f Filter, owners bool) error {
	list, err := readDirStat(dir)
	if err != nil {
		return err
	}
	slices.SortFunc(list, func(a, b dirStat) int {
		switch {
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	})
	for _, d := range list {
		r := d.name
		if rel != "" {
			r = rel + "/" + d.name
		}
		if f.Excluded(r) {
			continue
		}
		e := Entry{Path: r, Mode: uint32(d.mode.Perm())}
		if owners {
			e.Mode, e.UID, e.GID = uint32(d.mode&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)), d.uid, d.gid
		}
		switch {
		case d.mode.IsDir():
			if !f.MayContain(r) {
				continue
			}
			if err := checkUTF8(r, d.name); err != nil {
				return err
			}
			n.subdirKeys = append(n.subdirKeys, r+"/")
			if !f.Included(r) {
				continue // walk through it for included children, but it is not itself in scope
			}
			e.Type = TypeDir
		case d.mode.IsRegular():
			if !f.Included(r) {
				continue
			}
			e.Type, e.Size, e.MtimeNs = TypeFile, d.size, d.mtimeNs
		case d.mode&fs.ModeSymlink != 0:
			if !f.Included(r) {
				continue
			}
			e.Type = TypeSymlink
			if e.Target, err = os.Readlink(filepath.Join(dir, d.name)); err != nil {
				return err
			}
			if !utf8.ValidString(e.Target) {
				return fmt.Errorf("symlink %q points to %q, which is not valid UTF-8: change it or exclude it with exclude_paths", r, e.Target)
			}
		default:
			continue // sockets, pipes, devices: not workspace content
		}
		if err := checkUTF8(r, d.name); err != nil {
			return err
		}
		n.entries = append(n.entries, e)
	}
	slices.Sort(n.subdirKeys) // "a-b/" < "a/" although "a" < "a-b"
	n.subdirs = make([]*scanNode, len(n.subdirKeys))
	return nil
}

// checkUTF8 refuses a name the JSON manifest cannot hold (it would store
// U+FFFD instead, and the snapshot would not restore the name as itself).
// Only names in scope are checked: an excluded one does not matter.
func checkUTF8(rel, name string) error {
	if !utf8.ValidString(name) {
		return fmt.Errorf("file name %q is not valid UTF-8: rename it or exclude it with exclude_paths", rel)
	}
	return nil
}
