package checkpoint

import (
	"iter"
	"sort"
)

// Diff is what changed from one snapshot to another. Env is compared by
// name and value, but only names are reported: values are secret.
type Diff struct {
	FilesAdded      []string `json:"files_added"`
	FilesRemoved    []string `json:"files_removed"`
	FilesModified   []string `json:"files_modified"`
	EnvAdded        []string `json:"env_added"`
	EnvRemoved      []string `json:"env_removed"`
	EnvModified     []string `json:"env_modified"`
	SizeChangeBytes int64    `json:"size_change_bytes"`
}

// Compare diffs two manifests and their envs. Directories are left out:
// a path list of files and links is what users compare.
func Compare(from, to *Manifest, fromEnv, toEnv map[string]string) Diff {
	d := Diff{FilesAdded: []string{}, FilesRemoved: []string{}, FilesModified: []string{},
		EnvAdded: []string{}, EnvRemoved: []string{}, EnvModified: []string{}}
	before := map[string]Entry{}
	for p, e := range from.diffPaths() {
		before[p] = e
	}
	for p, e := range to.diffPaths() {
		old, ok := before[p]
		switch {
		case !ok:
			d.FilesAdded = append(d.FilesAdded, p)
		case old.Type != e.Type || old.Digest != e.Digest || old.Mode != e.Mode || old.Target != e.Target ||
			old.UID != e.UID || old.GID != e.GID:
			d.FilesModified = append(d.FilesModified, p)
		}
		delete(before, p)
	}
	for p := range before {
		d.FilesRemoved = append(d.FilesRemoved, p)
	}
	for k, v := range toEnv {
		old, ok := fromEnv[k]
		switch {
		case !ok:
			d.EnvAdded = append(d.EnvAdded, k)
		case old != v:
			d.EnvModified = append(d.EnvModified, k)
		}
	}
	for k := range fromEnv {
		if _, ok := toEnv[k]; !ok {
			d.EnvRemoved = append(d.EnvRemoved, k)
		}
	}
	for _, l := range [][]string{d.FilesAdded, d.FilesRemoved, d.FilesModified, d.EnvAdded, d.EnvRemoved, d.EnvModified} {
		sort.Strings(l)
	}
	d.SizeChangeBytes = to.SizeBytes - from.SizeBytes
	return d
}

// diffPaths yields the files and links a diff compares, by the path it
// reports: a workspace path as it is, a volume's as volume:<name>/<path>.
func (m *Manifest) diffPaths() iter.Seq2[string, Entry] {
	return func(yield func(string, Entry) bool) {
		for _, e := range m.Entries {
			if e.Type != TypeDir && !yield(e.Path, e) {
				return
			}
		}
		for _, v := range m.Volumes {
			for _, e := range v.Entries {
				if e.Type != TypeDir && !yield("volume:"+v.Name+"/"+e.Path, e) {
					return
				}
			}
		}
	}
}

// Diff compares two snapshots of this store.
func (s *Store) Diff(fromID, toID string) (Diff, error) {
	from, err := s.Load(fromID)
	if err != nil {
		return Diff{}, err
	}
	to, err := s.Load(toID)
	if err != nil {
		return Diff{}, err
	}
	fromEnv, err := s.LoadEnv(from)
	if err != nil {
		return Diff{}, err
	}
	toEnv, err := s.LoadEnv(to)
	if err != nil {
		return Diff{}, err
	}
	return Compare(from, to, fromEnv, toEnv), nil
}
