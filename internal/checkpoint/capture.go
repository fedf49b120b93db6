package checkpoint

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

// Limits bound a snapshot; checked before anything is written.
type Limits struct {
	MaxBytes int64
	MaxFiles int
}

// Default limits per snapshot, settable per profile.
const (
	DefaultMaxBytes = 10 << 30
	DefaultMaxFiles = 100000
)

// CaptureOptions describe a snapshot to take.
type CaptureOptions struct {
	ID          string
	Name        string
	Description string
	SandboxID   string
	Profile     string
	Metadata    map[string]string
	Filter      Filter
	IncludeEnv  bool
	Limits      Limits
	Now         time.Time
	Workers     int // parallel file readers; 0 means 4

	// Volumes captured before, under the same shared lock (CaptureVolume),
	// and the bytes they added to the store.
	Volumes            []Volume `json:"volumes,omitempty"`
	VolumesStoredBytes int64    `json:"volumes_stored_bytes,omitempty"`

	// Done, when closed, means the caller has gone (connection cut, provider
	// killed): the capture stops and writes no manifest, so nothing trusts it.
	Done <-chan struct{} `json:"-"`
}

// ErrAborted is returned when the caller went away mid-operation.
var ErrAborted = errors.New("aborted: the caller went away before the operation finished")

func aborted(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// Capture snapshots workspace into the store. Unchanged files (same size and
// mtime as in the sandbox's previous snapshot) are not read again; new
// content is written once, under its digest. The manifest is written last.
// opts.Volumes, captured before (CaptureVolume, under the caller's shared
// lock: LockShared), join the workspace in the one manifest.
func (s *Store) Capture(workspace string, opts CaptureOptions) (*Manifest, error) {
	if err := CheckID(opts.ID); err != nil {
		return nil, err
	}
	if err := opts.Filter.Validate(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(s.manifestPath(opts.ID)); err == nil {
		return nil, fmt.Errorf("snapshot %s already exists", opts.ID)
	}
	// The shared lock keeps garbage collection out from here to the
	// manifest: the objects the stat cache vouches for stay in the store.
	unlock, err := s.lock(false)
	if err != nil {
		return nil, err
	}
	defer unlock()

	var used Usage // the volumes' files count against the same limits
	for _, v := range opts.Volumes {
		used = used.Add(v.Entries)
	}
	t, err := s.captureTree(workspace, opts.Filter, false, opts.SandboxID, opts.Limits, used, opts.Workers, opts.Done)
	if err != nil {
		return nil, err
	}
	var env map[string]string
	if opts.IncludeEnv {
		if env, err = readDotEnv(filepath.Join(workspace, ".env")); err != nil {
			return nil, err
		}
	}
	m := &Manifest{
		ID: opts.ID, Name: opts.Name, Description: opts.Description, SandboxID: opts.SandboxID,
		Profile: opts.Profile, CreatedAt: opts.Now.UTC(), Metadata: opts.Metadata,
		Include: opts.Filter.Include, Exclude: opts.Filter.Exclude, Entries: t.entries,
		Volumes: opts.Volumes, StoredBytes: opts.VolumesStoredBytes + t.stored, ScannedAtNs: t.scannedAtNs,
	}
	if err := s.save(m, env); err != nil {
		return nil, err
	}
	return m, nil
}

// tree is one directory's capture: its entries, the bytes it added to the
// store and when it was scanned.
type tree struct {
	entries     []Entry
	stored      int64
	scannedAtNs int64
}

// captureTree scans dir and stores the content of its files, reading only
// those the stat cache under cacheKey (statcache.go) does not vouch for.
// The caller holds the shared lock.
// used is what parts of the same snapshot captured before hold: it counts
// against limits too.
func (s *Store) captureTree(dir string, f Filter, owners bool, cacheKey string, limits Limits, used Usage, workers int, done <-chan struct{}) (tree, error) {
	// The stat cache is read while the directory is scanned: two costs of
	// the same size, one CPU-bound and one bound by system calls.
	prevc := make(chan statCache, 1)
	go func() { prevc <- s.previous(cacheKey) }()
	scannedAt := time.Now().UnixNano()
	entries, err := scan(dir, f, owners)
	prev := <-prevc
	if err != nil {
		return tree{}, err
	}
	if err := checkLimits(used.Add(entries), limits); err != nil {
		return tree{}, err
	}

	// Files the stat cache vouches for keep their digest; only the rest are
	// read. The cache's snapshot is live and we hold the shared lock, so
	// garbage collection cannot have taken its objects: no stat needed.
	trustedBefore := prev.scannedAtNs - racyWindow.Nanoseconds()
	var toRead []int
	for i := range entries {
		e := &entries[i]
		if e.Type != TypeFile {
			continue
		}
		if p, ok := prev.files[e.Path]; ok && p.size == e.Size && p.mtimeNs == e.MtimeNs && e.MtimeNs < trustedBefore {
			e.Digest = p.digest
			continue
		}
		toRead = append(toRead, i)
	}
	var stored atomic.Int64
	err = forEach(toRead, workers, done, func(i int) error {
		e := &entries[i]
		n, err := s.storeFile(filepath.Join(dir, filepath.FromSlash(e.Path)), e)
		stored.Add(n)
		return err
	})
	if err != nil {
		return tree{}, err
	}
	if aborted(done) {
		return tree{}, ErrAborted
	}
	return tree{entries: entries, stored: stored.Load(), scannedAtNs: scannedAt}, nil
}

// Usage is what (part of) a snapshot holds, as limits count it.
type Usage struct {
	Bytes int64 `json:"bytes"`
	Files int   `json:"files"`
}

// Add is u with entries' files counted too.
func (u Usage) Add(entries []Entry) Usage {
	for _, e := range entries {
		if e.Type == TypeFile {
			u.Bytes += e.Size
			u.Files++
		}
	}
	return u
}

func checkLimits(u Usage, l Limits) error {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	if u.Files > l.MaxFiles {
		return fmt.Errorf("snapshot would hold %d files, over the limit of %d: narrow it with include_paths/exclude_paths or raise the profile's snapshot limit", u.Files, l.MaxFiles)
	}
	if u.Bytes > l.MaxBytes {
		return fmt.Errorf("snapshot would hold %d bytes, over the limit of %d: narrow it with include_paths/exclude_paths or raise the profile's snapshot limit", u.Bytes, l.MaxBytes)
	}
	return nil
}

// racyWindow: a file whose mtime lies this close to (or after) the previous
// scan may have been changed again within the filesystem's timestamp
// granularity without its mtime moving, so it is read again (as git does
// for "racily clean" entries).
const racyWindow = 2 * time.Second

// TestHookBeforeStore, nil outside tests, runs before a capture reads the
// file at rel: the agent's tests hold a capture there to kill it, or cut
// its client, at a point they know (every file before rel stored with one
// worker, nothing after it begun) instead of guessing with sleeps.
var TestHookBeforeStore func(rel string)

// storeFile stores the content of the file at src and sets e's digest and
// size. A file that fits in the copy buffer is read whole first and goes
// through storeSmall: most files of a tree are small, and for them one
// create in the object's own directory is the whole cost on the host. A
// larger one is copied into a temp object (compressed when it compresses:
// objects.go) while hashing it, then named by its digest (or the copy
// dropped when the store already has it). It returns the bytes newly added
// to the store, as stored on disk.
func (s *Store) storeFile(src string, e *Entry) (int64, error) {
	if TestHookBeforeStore != nil {
		TestHookBeforeStore(e.Path)
	}
	in, err := openRegular(src)
	if err != nil {
		return 0, fmt.Errorf("unable to read %s: %w", e.Path, err)
	}
	defer func() { _ = in.Close() }() // only read
	bp := copyBuffer()
	defer copyBuffers.Put(bp)
	head, err := io.ReadFull(in, *bp)
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF): // all of it
		n, err := s.storeSmall((*bp)[:head], e)
		if err != nil {
			return 0, fmt.Errorf("unable to store %s: %w", e.Path, err)
		}
		return n, nil
	case err != nil:
		return 0, fmt.Errorf("unable to read %s: %w", e.Path, err)
	}
	tmp, err := s.tempFile()
	if err != nil {
		return 0, err
	}
	digest, size, compressed, err := writeObject(tmp, io.MultiReader(bytes.NewReader((*bp)[:head]), in))
	var stored int64
	if err == nil {
		var st os.FileInfo
		if st, err = tmp.Stat(); err == nil {
			stored = st.Size()
		}
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp.Name()) // best effort: a leftover temp file is collected later
		return 0, fmt.Errorf("unable to store %s: %w", e.Path, err)
	}
	e.Digest, e.Size = digest, size
	if s.hasObject(e.Digest) {
		_ = os.Remove(tmp.Name()) // best effort: a leftover temp file is collected later
		return 0, nil
	}
	final := s.objectPath(e.Digest)
	if compressed {
		final = s.compressedPath(e.Digest)
	}
	if err := s.commit(tmp.Name(), final); err != nil {
		_ = os.Remove(tmp.Name()) // best effort: a leftover temp file is collected later
		return 0, err
	}
	return stored, nil
}

func readDotEnv(path string) (map[string]string, error) {
	f, err := openRegular(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // only read
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if ok {
			env[strings.TrimSpace(strings.TrimPrefix(k, "export "))] = v
		}
	}
	return env, sc.Err()
}
