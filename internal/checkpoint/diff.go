package checkpoint

import "sort"

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
	for _, e := range from.Entries {
		if e.Type != TypeDir {
			before[e.Path] = e
		}
	}
	for _, e := range to.Entries {
		if e.Type == TypeDir {
			continue
		}
		old, ok := before[e.Path]
		switch {
		case !ok:
			d.FilesAdded = append(d.FilesAdded, e.Path)
		case old.Type != e.Type || old.Digest != e.Digest || old.Mode != e.Mode || old.Target != e.Target:
			d.FilesModified = append(d.FilesModified, e.Path)
		}
		delete(before, e.Path)
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
