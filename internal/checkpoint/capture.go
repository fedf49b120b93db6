package checkpoint

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
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
	scannedAt := time.Now().UnixNano()
	entries, err := scan(workspace, opts.Filter)
	if err != nil {
		return nil, err
	}
	if err := checkLimits(entries, opts.Limits); err != nil {
		return nil, err
	}
	var env map[string]string
	if opts.IncludeEnv {
		if env, err = readDotEnv(filepath.Join(workspace, ".env")); err != nil {
			return nil, err
		}
	}

	unlock, err := s.lock(false)
	if err != nil {
		return nil, err
	}
	defer unlock()

	// Files the stat cache vouches for keep their digest; only the rest are
	// read. The cache's snapshot is live and we hold the shared lock, so
	// garbage collection cannot have taken its objects: no stat needed.
	prev := s.previous(opts.SandboxID)
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
	err = forEach(toRead, opts.Workers, opts.Done, func(i int) error {
		e := &entries[i]
		n, err := s.storeFile(filepath.Join(workspace, filepath.FromSlash(e.Path)), e)
		stored.Add(n)
		return err
	})
	if err != nil {
		return nil, err
	}
	if aborted(opts.Done) {
		return nil, ErrAborted
	}

	m := &Manifest{
		ID: opts.ID, Name: opts.Name, Description: opts.Description, SandboxID: opts.SandboxID,
		Profile: opts.Profile, CreatedAt: opts.Now.UTC(), Metadata: opts.Metadata,
		Include: opts.Filter.Include, Exclude: opts.Filter.Exclude, Entries: entries,
		StoredBytes: stored.Load(), ScannedAtNs: scannedAt,
	}
	if err := s.save(m, env); err != nil {
		return nil, err
	}
	return m, nil
}

// scan lists the workspace entries in scope, without reading file contents.
func scan(workspace string, f Filter) ([]Entry, error) {
	st, err := os.Stat(workspace)
	if err != nil || !st.IsDir() {
		return nil, fmt.Errorf("workspace %s is not a directory: %v", workspace, err)
	}
	// Directories are read concurrently (a bounded number at a time): the
	// scan is most of an incremental capture, and it is all system calls.
	// Order does not matter: seal sorts the entries.
	var (
		mu       sync.Mutex
		entries  []Entry
		firstErr error
		wg       sync.WaitGroup
		slots    = make(chan struct{}, scanParallelism)
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}
	var walk func(dir, rel string)
	walk = func(dir, rel string) {
		defer wg.Done()
		slots <- struct{}{}
		found, subdirs, err := scanDir(dir, rel, f)
		<-slots
		if err != nil {
			fail(err)
			return
		}
		mu.Lock()
		entries = append(entries, found...)
		mu.Unlock()
		for _, sub := range subdirs {
			wg.Add(1)
			go walk(filepath.Join(dir, filepath.Base(sub)), sub)
		}
	}
	wg.Add(1)
	walk(workspace, "")
	wg.Wait()
	if firstErr != nil {
		return nil, fmt.Errorf("unable to scan workspace %s: %w", workspace, firstErr)
	}
	return entries, nil
}

// scanParallelism bounds the directories read at once.
const scanParallelism = 4

// dirStat is one directory entry with its lstat facts (readDirStat).
type dirStat struct {
	name    string
	mode    fs.FileMode
	size    int64
	mtimeNs int64
}

// scanDir reads one directory: its in-scope entries, and the subdirectories
// (relative paths) the walk must descend into.
func scanDir(dir, rel string, f Filter) (found []Entry, subdirs []string, err error) {
	list, err := readDirStat(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, d := range list {
		r := d.name
		if rel != "" {
			r = rel + "/" + d.name
		}
		if f.Excluded(r) {
			continue
		}
		// The manifest is JSON, which cannot hold other bytes in a string:
		// refuse rather than store a name that would not restore as itself.
		if !utf8.ValidString(d.name) {
			return nil, nil, fmt.Errorf("file name %q is not valid UTF-8: rename it or exclude it with exclude_paths", r)
		}
		e := Entry{Path: r, Mode: uint32(d.mode.Perm())}
		switch {
		case d.mode.IsDir():
			if !f.MayContain(r) {
				continue
			}
			subdirs = append(subdirs, r)
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
				return nil, nil, err
			}
		default:
			continue // sockets, pipes, devices: not workspace content
		}
		found = append(found, e)
	}
	return found, subdirs, nil
}

func checkLimits(entries []Entry, l Limits) error {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	var size int64
	files := 0
	for _, e := range entries {
		if e.Type == TypeFile {
			size += e.Size
			files++
		}
	}
	if files > l.MaxFiles {
		return fmt.Errorf("snapshot would hold %d files, over the limit of %d: narrow it with include_paths/exclude_paths or raise the profile's snapshot limit", files, l.MaxFiles)
	}
	if size > l.MaxBytes {
		return fmt.Errorf("snapshot would hold %d bytes, over the limit of %d: narrow it with include_paths/exclude_paths or raise the profile's snapshot limit", size, l.MaxBytes)
	}
	return nil
}

// racyWindow: a file whose mtime lies this close to (or after) the previous
// scan may have been changed again within the filesystem's timestamp
// granularity without its mtime moving, so it is read again (as git does
// for "racily clean" entries).
const racyWindow = 2 * time.Second

// storeFile hashes src while copying it into a temp object, then names the
// object by its digest (or drops the copy when the store already has it).
// It returns the bytes newly added to the store.
func (s *Store) storeFile(src string, e *Entry) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, fmt.Errorf("unable to read %s: %w", e.Path, err)
	}
	defer in.Close()
	tmp, err := s.tempFile()
	if err != nil {
		return 0, err
	}
	h := sha256.New()
	n, err := copyHashed(io.MultiWriter(tmp, h), in)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp.Name())
		return 0, fmt.Errorf("unable to store %s: %w", e.Path, err)
	}
	e.Digest, e.Size = hex.EncodeToString(h.Sum(nil)), n
	if s.hasObject(e.Digest) {
		os.Remove(tmp.Name())
		return 0, nil
	}
	if err := commit(tmp.Name(), s.objectPath(e.Digest)); err != nil {
		os.Remove(tmp.Name())
		return 0, err
	}
	return n, nil
}

// readDotEnv parses a KEY=VALUE .env file; a missing file is no env.
func readDotEnv(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
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
