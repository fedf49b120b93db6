package checkpoint

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// stagingPrefix names the directory inside the target where restored files
// are written and verified before any of them is moved into place.
const stagingPrefix = ReservedPrefix + "restore-"

// RestoreOptions say what a restore writes into its target.
type RestoreOptions struct {
	Files     bool // restore files
	Env       bool // restore the captured env as the target's .env
	Overwrite bool // files present in both take the snapshot's content
	Prune     bool // remove in-scope files the snapshot does not have
	// Owners gives every entry the owner it was captured with (a volume's;
	// the restore runs as root). Workspace entries belong to the restorer.
	Owners  bool `json:"owners,omitempty"`
	Workers int  // parallel object readers; 0 means 4
	// Writeback starts writing each restored file to disk as soon as it
	// is written, without waiting for it: what comes after the restore
	// and waits for the data to be on disk (a helper container's
	// teardown; the engine creating a container, on ext4) then waits
	// less, since the disk worked during the restore.
	Writeback bool `json:"writeback,omitempty"`

	// Done, when closed, means the caller has gone: a restore not yet
	// applying stops before it changes the target.
	Done <-chan struct{} `json:"-"`
}

// RestoreResult reports what a restore did.
type RestoreResult struct {
	FilesRestored int `json:"files_restored"`
	Pruned        int `json:"pruned"`
}

// Restore writes snapshot id into target. Every object is read, verified
// against its digest and staged inside target first; only when all of them
// verify is anything in target changed. Symlinks are created as links and
// never followed while writing; no entry can land outside target.
func (s *Store) Restore(id, target string, opts RestoreOptions) (RestoreResult, error) {
	m, err := s.Load(id) // Load checks the manifest digest and entry paths
	if err != nil {
		return RestoreResult{}, err
	}
	env, err := s.LoadEnv(m)
	if err != nil {
		return RestoreResult{}, err
	}
	return s.RestoreManifest(m, env, target, opts)
}

// RestoreManifest restores a manifest held by the caller (one from another
// host, whose objects were transferred here), with the same checks.
func (s *Store) RestoreManifest(m *Manifest, env map[string]string, target string, opts RestoreOptions) (RestoreResult, error) {
	var res RestoreResult
	if err := m.Check(); err != nil {
		return res, err
	}
	if m.EnvDigest != "" {
		data, _ := json.Marshal(env)
		if digestOf(data) != m.EnvDigest {
			return res, fmt.Errorf("snapshot %s: captured env does not match the manifest", m.ID)
		}
	}
	if st, err := os.Lstat(target); err != nil || !st.IsDir() {
		return res, fmt.Errorf("restore target %s is not a directory: %v", target, err)
	}

	if opts.Files && isEmptyDir(target) {
		return s.restoreFresh(m, env, target, opts)
	}

	var todo []Entry
	if opts.Files {
		for _, e := range m.Entries {
			if !opts.Overwrite && e.Type != TypeDir {
				if _, err := os.Lstat(filepath.Join(target, filepath.FromSlash(e.Path))); err == nil {
					continue // keep what the target has
				}
			}
			todo = append(todo, e)
		}
	}

	staging, err := os.MkdirTemp(target, stagingPrefix)
	if err != nil {
		return res, fmt.Errorf("unable to stage the restore in %s: %w", target, err)
	}
	// Best effort: what staging still holds is only copies.
	defer func() { _ = os.RemoveAll(staging) }()
	staged, err := s.stage(todo, staging, opts)
	if err != nil {
		return res, err // target untouched but for the staging directory, now removed
	}
	if aborted(opts.Done) {
		return res, ErrAborted
	}

	// Everything verified: apply. Sorted order puts a parent directory
	// before its children; directory modes are set last, so a read-only
	// directory still receives its files.
	var dirs []Entry
	for _, e := range todo {
		dst := filepath.Join(target, filepath.FromSlash(e.Path))
		if err := safeParents(target, e.Path); err != nil {
			return res, err
		}
		switch e.Type {
		case TypeDir:
			if st, err := os.Lstat(dst); err == nil && !st.IsDir() {
				if err := os.Remove(dst); err != nil {
					return res, err
				}
			}
			if err := os.Mkdir(dst, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return res, err
			}
			dirs = append(dirs, e)
		case TypeFile:
			if err := clearPath(dst); err != nil {
				return res, err
			}
			if err := os.Rename(staged[e.Path], dst); err != nil {
				return res, err
			}
			res.FilesRestored++
		case TypeSymlink:
			if err := clearPath(dst); err != nil {
				return res, err
			}
			if err := os.Symlink(e.Target, dst); err != nil {
				return res, err
			}
			if err := own(dst, e, opts.Owners); err != nil {
				return res, err
			}
			res.FilesRestored++
		}
	}
	if err := setDirModes(target, dirs, opts.Owners); err != nil {
		return res, err
	}
	if opts.Files && opts.Prune {
		n, err := prune(target, m, filepath.Base(staging))
		res.Pruned = n
		if err != nil {
			return res, err
		}
	}
	if opts.Env && m.EnvDigest != "" {
		if err := writeDotEnv(filepath.Join(target, ".env"), env); err != nil {
			return res, err
		}
	}
	return res, nil
}

// isEmptyDir reports whether dir holds nothing (a new sandbox's workspace).
func isEmptyDir(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }() // only read
	names, _ := f.Readdirnames(1)
	return len(names) == 0
}

// restoreFresh restores into an empty target (a new sandbox) without a
// staging area: files are written in place while their digests are checked,
// and on any failure everything written is removed again, so the target is
// left as it was found — empty. Symlinks are created last, after every file
// and directory, so no write can pass through one.
func (s *Store) restoreFresh(m *Manifest, env map[string]string, target string, opts RestoreOptions) (res RestoreResult, err error) {
	defer func() {
		if err != nil {
			entries, _ := os.ReadDir(target)
			for _, e := range entries {
				_ = os.RemoveAll(filepath.Join(target, e.Name())) // best effort: err is what is reported
			}
			res = RestoreResult{}
		}
	}()
	// Every directory first, each once, so file writers need no checks.
	var dirs []Entry
	made := map[string]bool{".": true}
	var mkdir func(rel string) error
	mkdir = func(rel string) error {
		if made[rel] {
			return nil
		}
		if err := mkdir(path.Dir(rel)); err != nil {
			return err
		}
		made[rel] = true
		return os.Mkdir(filepath.Join(target, filepath.FromSlash(rel)), 0o700)
	}
	for _, e := range m.Entries {
		rel := path.Dir(e.Path)
		if e.Type == TypeDir {
			rel = e.Path
			dirs = append(dirs, e)
		}
		if err := mkdir(rel); err != nil {
			return res, err
		}
	}
	err = forEachFile(m.Entries, opts.Workers, opts.Done, func(i int) error {
		e := m.Entries[i]
		return s.writeVerified(e, filepath.Join(target, filepath.FromSlash(e.Path)), opts)
	})
	if err != nil {
		return res, err
	}
	if aborted(opts.Done) {
		return res, ErrAborted
	}
	for _, e := range m.Entries {
		switch e.Type {
		case TypeFile:
			res.FilesRestored++
		case TypeSymlink:
			dst := filepath.Join(target, filepath.FromSlash(e.Path))
			if err := os.Symlink(e.Target, dst); err != nil {
				return res, err
			}
			if err := own(dst, e, opts.Owners); err != nil {
				return res, err
			}
			res.FilesRestored++
		}
	}
	if err := setDirModes(target, dirs, opts.Owners); err != nil {
		return res, err
	}
	if opts.Env && m.EnvDigest != "" {
		if err := writeDotEnv(filepath.Join(target, ".env"), env); err != nil {
			return res, err
		}
	}
	return res, nil
}

// setDirModes gives restored directories their modes (and owners), the
// deepest first: a read-only directory still received its files.
func setDirModes(target string, dirs []Entry, owners bool) error {
	for i := len(dirs) - 1; i >= 0; i-- {
		p := filepath.Join(target, filepath.FromSlash(dirs[i].Path))
		if err := own(p, dirs[i], owners); err != nil {
			return err
		}
		if err := os.Chmod(p, fs.FileMode(dirs[i].Mode)); err != nil {
			return err
		}
	}
	return nil
}

// own gives p (never what a link at p points to) e's captured owner.
func own(p string, e Entry, owners bool) error {
	if !owners {
		return nil
	}
	return os.Lchown(p, e.UID, e.GID)
}

// stage copies every file entry's object into staging, verifying digests.
// The first mismatch or missing object fails the whole restore, naming the file.
func (s *Store) stage(todo []Entry, staging string, opts RestoreOptions) (map[string]string, error) {
	paths := make([]string, len(todo))
	err := forEachFile(todo, opts.Workers, nil, func(i int) error {
		var err error
		paths[i], err = s.stageOne(todo[i], staging, opts)
		return err
	})
	if err != nil {
		return nil, err
	}
	staged := map[string]string{}
	for i, e := range todo {
		if e.Type == TypeFile {
			staged[e.Path] = paths[i]
		}
	}
	return staged, nil
}

func (s *Store) stageOne(e Entry, staging string, opts RestoreOptions) (string, error) {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	p := filepath.Join(staging, hex.EncodeToString(b))
	return p, s.writeVerified(e, p, opts)
}

// writeVerified copies e's object to the new file dst (never an existing
// one: O_EXCL), checking its sha256 on the way; with opts.Owners, dst gets
// e's owner (before its mode: a chown clears setuid and setgid bits); with
// opts.Writeback, its writeback starts.
func (s *Store) writeVerified(e Entry, dst string, opts RestoreOptions) error {
	in, err := s.openObject(e.Digest)
	if err != nil {
		return fmt.Errorf("file %s: object %s is missing from the store: %w", e.Path, e.Digest, err)
	}
	defer func() { _ = in.Close() }() // only read
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, fs.FileMode(e.Mode)&0o777|0o600)
	if err != nil {
		return fmt.Errorf("file %s: %w", e.Path, err)
	}
	h := sha256.New()
	err = copyBuffered(io.MultiWriter(out, h), in)
	if err == nil && opts.Writeback {
		startWriteback(out)
	}
	if err == nil && opts.Owners {
		err = out.Chown(e.UID, e.GID)
	}
	if err == nil {
		err = out.Chmod(fs.FileMode(e.Mode))
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("file %s: %w", e.Path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != e.Digest {
		return fmt.Errorf("file %s: stored object is corrupt (sha256 %s, expected %s); nothing was restored", e.Path, got, e.Digest)
	}
	return nil
}

// safeParents makes every parent of rel inside target a real directory:
// a symlink (or file) in the way is removed, so a write can never follow a
// link out of the workspace.
func safeParents(target, rel string) error {
	elems := strings.Split(rel, "/")
	dir := target
	for _, el := range elems[:len(elems)-1] {
		dir = filepath.Join(dir, el)
		st, err := os.Lstat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(dir, 0o755); err != nil {
				return err
			}
		case err != nil:
			return err
		case !st.IsDir(): // a symlink or a file where a directory belongs
			if err := os.Remove(dir); err != nil {
				return err
			}
			if err := os.Mkdir(dir, 0o755); err != nil {
				return err
			}
		}
	}
	return nil
}

// clearPath removes whatever is at p (a file, a link — not what it points
// to — or a directory tree) so p can be created afresh.
func clearPath(p string) error {
	st, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.IsDir() {
		return os.RemoveAll(p)
	}
	return os.Remove(p)
}

// prune removes in-scope paths of target the snapshot does not have:
// files and links first, then directories that are left empty (one holding
// out-of-scope files stays).
func prune(target string, m *Manifest, staging string) (int, error) {
	keep := map[string]bool{}
	for _, e := range m.Entries {
		keep[e.Path] = true
	}
	f := m.Filter()
	var files, dirs []string
	err := filepath.WalkDir(target, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == target {
			return nil
		}
		rel, _ := filepath.Rel(target, p)
		rel = filepath.ToSlash(rel)
		if rel == staging || f.Excluded(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() && !f.MayContain(rel) {
			return filepath.SkipDir
		}
		if keep[rel] || !f.Included(rel) {
			return nil
		}
		if d.IsDir() {
			dirs = append(dirs, p)
		} else {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range files {
		if err := os.Remove(p); err != nil {
			return n, err
		}
		n++
	}
	sort.Sort(sort.Reverse(sort.StringSlice(dirs))) // children before parents
	for _, p := range dirs {
		if os.Remove(p) == nil {
			n++
		}
	}
	return n, nil
}

func writeDotEnv(path string, env map[string]string) error {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(env)) {
		fmt.Fprintf(&b, "%s=%s\n", k, env[k])
	}
	// O_EXCL after clearing: never write through a link planted at the temp name.
	tmp := path + ".sandboxer-tmp"
	if err := clearPath(tmp); err != nil {
		return err
	}
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(b.String()); err != nil {
		_ = f.Close() // the write error is the one reported
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path) // rename replaces a link at path, never follows it
}
