package checkpoint

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/filelock"
)

// ErrNotFound means the store has no snapshot of that id.
var ErrNotFound = errors.New("snapshot not found")

// Store is a checkpoint store on the local filesystem:
//
//	format              the layout's version (storeFormat)
//	objects/ab/cdef…   file contents, named by their sha256, raw or as
//	                    cdef….zst (objects.go)
//	snapshots/<id>.json manifests (written last: presence means complete)
//	snapshots/<id>.env  captured env values (0600)
//	tmp/                objects and manifests being written
//	latest/<sandbox>    stat cache of the sandbox's newest snapshot (statcache.go)
//	lock                flock: shared while writing, exclusive for GC
type Store struct {
	Dir string
	// Owner, when set, is given every file and directory this process
	// creates in the store (a volume helper running as root: volume.go).
	Owner *Owner
}

// storeFormat is the layout this code writes and reads: 2 since objects
// may be zstd-compressed, 3 since manifests are packed (manifest_json.go).
// A store without a format file is of format 1 (raw objects only); formats
// 1 and 2 read as they are, and opening one records format 3. One of a
// later format is refused rather than half understood: so an older agent
// meeting packed manifests stops at the store's format, naming it, rather
// than calling them corrupt and failing its deletes one by one.
const storeFormat = 3

// Open creates the store's layout under dir if needed, and records its
// format.
func Open(dir string) (*Store, error) {
	for _, sub := range []string{"objects", "snapshots", "tmp", "latest"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, fmt.Errorf("unable to create checkpoint store %s: %w", dir, err)
		}
	}
	s := &Store{Dir: dir}
	format := filepath.Join(dir, "format")
	data, err := os.ReadFile(format)
	switch v, perr := strconv.Atoi(strings.TrimSpace(string(data))); {
	case errors.Is(err, fs.ErrNotExist) || err == nil && perr == nil && v < storeFormat:
		if err := s.writeAtomic(format, []byte(strconv.Itoa(storeFormat)+"\n")); err != nil {
			return nil, fmt.Errorf("unable to create checkpoint store %s: %w", dir, err)
		}
	case err != nil:
		return nil, fmt.Errorf("checkpoint store %s: %w", dir, err)
	case perr != nil:
		return nil, fmt.Errorf("checkpoint store %s: its format file holds %q, not a version", dir, data)
	case v > storeFormat:
		return nil, fmt.Errorf("checkpoint store %s has format %d, newer than this provider reads (%d): upgrade the provider", dir, v, storeFormat)
	}
	return s, nil
}

// IDPattern is the one grammar of ids, sandboxes' and snapshots' alike:
// lowercase letters, digits and dashes, 1 to 63 characters, starting with
// a letter or digit. An id that matches is safe as a file name, a directory
// name and part of a compose project name, unquoted.
var IDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// IDGrammar says what IDPattern accepts, for diagnostics.
const IDGrammar = "lowercase letters, digits and dashes, 1 to 63 characters, starting with a letter or digit"

// CheckID rejects ids that could not be file names in the store.
func CheckID(id string) error {
	if !IDPattern.MatchString(id) {
		return fmt.Errorf("invalid snapshot id %q: expected %s", id, IDGrammar)
	}
	return nil
}

func (s *Store) manifestPath(id string) string {
	return filepath.Join(s.Dir, SnapshotsDir, ManifestFile(id))
}
func (s *Store) envPath(id string) string { return filepath.Join(s.Dir, SnapshotsDir, EnvFile(id)) }
func (s *Store) latestPath(sandboxID string) string {
	return filepath.Join(s.Dir, "latest", sandboxID)
}

// tempFile creates a file in tmp/ that a crash leaves as garbage, never as
// something a later snapshot trusts: only a rename gives it a real name.
func (s *Store) tempFile() (*os.File, error) {
	return s.createIn(filepath.Join(s.Dir, "tmp"), "")
}

// createIn creates a new file in dir named prefix and a random suffix.
func (s *Store) createIn(dir, prefix string) (*os.File, error) {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	f, err := os.OpenFile(filepath.Join(dir, prefix+hex.EncodeToString(b)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err == nil && s.Owner != nil {
		// Given away before it has a real name: the store's owner never
		// finds an object it cannot read.
		if err = f.Chown(s.Owner.UID, s.Owner.GID); err != nil {
			_ = f.Close()           // the chown error is the one reported
			_ = os.Remove(f.Name()) // best effort: debris for GC
		}
	}
	return f, err
}

// objectTempPrefix starts the name of an object being written in its own
// directory (storeSmall): never a digest, so never taken for an object, and
// removed by the next garbage collection when a crash leaves it.
const objectTempPrefix = ".tmp-"

// writeObjectFile writes body as the object file final: under a temp name
// in final's directory (created when missing), then renamed.
func (s *Store) writeObjectFile(final string, body []byte) error {
	dir := filepath.Dir(final)
	f, err := s.createIn(dir, objectTempPrefix)
	if errors.Is(err, fs.ErrNotExist) {
		if err = s.makeObjectDir(dir); err == nil {
			f, err = s.createIn(dir, objectTempPrefix)
		}
	}
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err != nil {
		_ = os.Remove(tmp) // best effort: garbage collection removes what is left
	}
	return err
}

// makeObjectDir creates an object's directory, given to the store's owner.
func (s *Store) makeObjectDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if s.Owner != nil {
		return os.Chown(dir, s.Owner.UID, s.Owner.GID)
	}
	return nil
}

// commit renames a finished temp file to its final name (an object's
// directory made for it belongs to the store's owner too).
func (s *Store) commit(tmp, final string) error {
	dir := filepath.Dir(final)
	if _, err := os.Stat(dir); err != nil {
		if err := s.makeObjectDir(dir); err != nil {
			return err
		}
	}
	return os.Rename(tmp, final)
}

// Load reads and checks a manifest (ParseManifest).
func (s *Store) Load(id string) (*Manifest, error) {
	if err := CheckID(id); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(s.manifestPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return ParseManifest(id, data)
}

// LoadEnv reads a snapshot's captured env, verified against the manifest
// (ParseEnv).
func (s *Store) LoadEnv(m *Manifest) (map[string]string, error) {
	if m.EnvDigest == "" {
		return map[string]string{}, nil
	}
	data, err := os.ReadFile(s.envPath(m.ID))
	if errors.Is(err, fs.ErrNotExist) {
		data = nil // ParseEnv reports it missing
	} else if err != nil {
		return nil, fmt.Errorf("snapshot %s: captured env is unreadable: %w", m.ID, err)
	}
	return ParseEnv(m, data)
}

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// save writes env (if any) then the manifest, each atomically; the manifest
// last, so the snapshot exists only once everything it needs is in place.
func (s *Store) save(m *Manifest, env map[string]string) error {
	// Objects are written without an fsync each; whatever the manifest
	// names is on disk before the manifest is.
	if err := syncStore(s.Dir); err != nil {
		return fmt.Errorf("unable to flush checkpoint store %s to disk: %w", s.Dir, err)
	}
	if len(env) > 0 {
		data, _ := json.Marshal(env)
		m.EnvDigest = digestOf(data)
		m.EnvNames = slices.Sorted(maps.Keys(env))
		if err := s.writeAtomic(s.envPath(m.ID), data); err != nil {
			return err
		}
	}
	m.seal()
	// The stat cache for the sandbox's next capture (statcache.go) is
	// written alongside the manifest and named once the manifest is in
	// place. Only an optimisation: without it a capture reads every file.
	// Each volume has a cache of its own (latest/<sandbox>@<volume>).
	type cacheFile struct{ key, tmp string }
	cache := make(chan []cacheFile, 1)
	if m.SandboxID != "" && m.Source == "" {
		go func() {
			var files []cacheFile
			write := func(key string) {
				if tmp, err := s.writeTemp(encodeStatCache(m.ID), false); err == nil {
					files = append(files, cacheFile{key, tmp})
				}
			}
			write(m.SandboxID)
			for _, v := range m.Volumes {
				write(volumeCacheKey(m.SandboxID, v.Name))
			}
			cache <- files
		}()
	} else {
		cache <- nil
	}
	data, err := packManifest(m)
	if err == nil {
		err = s.writeAtomic(s.manifestPath(m.ID), data)
	}
	for _, f := range <-cache {
		if err != nil || s.commit(f.tmp, s.latestPath(f.key)) != nil {
			_ = os.Remove(f.tmp) // best effort: an optional cache; a leftover is debris for GC
		}
	}
	return err
}

func (s *Store) writeAtomic(final string, data []byte) error {
	return s.writeFile(final, data, true)
}

// writeFile writes data under a temporary name and renames it to final;
// sync flushes it to disk first (manifests and env; a cache need not be).
func (s *Store) writeFile(final string, data []byte, sync bool) error {
	tmp, err := s.writeTemp(data, sync)
	if err != nil {
		return err
	}
	if err := s.commit(tmp, final); err != nil {
		_ = os.Remove(tmp) // best effort: a leftover temp file is debris for GC
		return err
	}
	return nil
}

// writeTemp writes data to a new temp file and returns its name.
func (s *Store) writeTemp(data []byte, sync bool) (string, error) {
	f, err := s.tempFile()
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name()) // best effort: a leftover temp file is debris for GC
		return "", err
	}
	return f.Name(), nil
}

// List returns every snapshot's summary, oldest first.
func (s *Store) List() ([]Summary, error) {
	names, err := filepath.Glob(filepath.Join(s.Dir, SnapshotsDir, "*"+manifestExt))
	if err != nil {
		return nil, err
	}
	var out []Summary
	for _, n := range names {
		m, err := s.Load(strings.TrimSuffix(filepath.Base(n), manifestExt))
		if errors.Is(err, ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, m.Summary())
	}
	sortSummaries(out)
	return out, nil
}

// Delete removes a snapshot and frees the objects no other snapshot uses.
// Deleting a snapshot that is not there is success.
func (s *Store) Delete(id string) (freed int64, err error) {
	if err := CheckID(id); err != nil {
		return 0, err
	}
	unlock, err := s.lock(true)
	if err != nil {
		return 0, err
	}
	defer unlock()
	if err := os.Remove(s.manifestPath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	if err := os.Remove(s.envPath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	return s.gcLocked()
}

// GC removes the objects no snapshot references, and debris: after a
// restore from another host, the objects transferred for it.
func (s *Store) GC() (freed int64, err error) {
	unlock, err := s.lock(true)
	if err != nil {
		return 0, err
	}
	defer unlock()
	return s.gcLocked()
}

// gcLocked removes unreferenced objects and stale temp files. The caller
// holds the exclusive lock, so no capture is between writing an object and
// writing the manifest that references it.
func (s *Store) gcLocked() (int64, error) {
	live := map[string]bool{}
	names, err := filepath.Glob(filepath.Join(s.Dir, "snapshots", "*.json"))
	if err != nil {
		return 0, err
	}
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			return 0, err
		}
		m, err := unpackManifest(data)
		if err != nil {
			// A manifest we cannot read may still reference objects: keep all.
			return 0, fmt.Errorf("garbage collection stopped: %s is unreadable: %w", n, err)
		}
		for e := range m.Files() {
			if e.Type == TypeFile {
				live[e.Digest] = true
			}
		}
	}
	var freed int64
	err = filepath.WalkDir(filepath.Join(s.Dir, "objects"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		digest := objectDigest(filepath.Base(filepath.Dir(p)), d.Name())
		if live[digest] { // never an object being written (objectTempPrefix): its name is no digest
			return nil
		}
		if info, err := d.Info(); err == nil {
			freed += info.Size()
		}
		return os.Remove(p) //nolint:gosec // G122: the store's own objects directory, and Remove does not follow a final symlink
	})
	if err != nil {
		return freed, err
	}
	// Temp files and env files without a manifest are debris of interrupted
	// writes (or of a manifest removed by hand): no writer is active now.
	debris, _ := filepath.Glob(filepath.Join(s.Dir, "tmp", "*"))
	envs, _ := filepath.Glob(filepath.Join(s.Dir, "snapshots", "*.env"))
	for _, e := range envs {
		if _, err := os.Stat(strings.TrimSuffix(e, ".env") + ".json"); errors.Is(err, fs.ErrNotExist) {
			debris = append(debris, e)
		}
	}
	latest, _ := filepath.Glob(filepath.Join(s.Dir, "latest", "*"))
	for _, l := range latest {
		if _, err := s.readStatCache(filepath.Base(l)); err != nil {
			debris = append(debris, l) // damaged, or its snapshot is gone
		}
	}
	for _, d := range debris {
		_ = os.Remove(d) // best effort: debris left now is retried by the next GC
	}
	return freed, nil
}

// LockShared takes the store lock shared, as a capture does: for a caller
// that stores objects (volume helpers) before the capture that references
// them begins, holding it until the capture's manifest is written.
func (s *Store) LockShared() (func(), error) { return s.lock(false) }

// lock takes the store lock: shared while objects and a manifest are being
// written, exclusive for garbage collection.
func (s *Store) lock(exclusive bool) (func(), error) {
	return filelock.Lock(filepath.Join(s.Dir, "lock"), exclusive)
}

// Usage reports the store's size on disk and its snapshot count.
func (s *Store) Usage() (bytes int64, snapshots int, err error) {
	names, _ := filepath.Glob(filepath.Join(s.Dir, "snapshots", "*.json"))
	err = filepath.WalkDir(s.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if info, err := d.Info(); err == nil {
			bytes += info.Size()
		}
		return nil
	})
	return bytes, len(names), err
}
