package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// Volumes are captured and restored where they are mounted: on a docker
// host, inside a helper container that mounts the volume and the store
// (internal/agent), running this code as root, since volume data belongs to
// whatever users the services run as. The workspace and the manifest are
// written by the agent outside, as the host's user; the helper's writes to
// the store are given to the store's owner (Owner), so that user can read,
// transfer and collect them like its own.

// Owner is who owns a store's files: a capture running as root (a volume
// helper) gives everything it creates in the store to the store's owner.
type Owner struct{ UID, GID int }

// StoreOwner is the owner of the store at dir when this process runs as
// root and the store is someone else's; nil otherwise (nothing to give).
func StoreOwner(dir string) (*Owner, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	_, uid, gid, err := rootStat(dir)
	if err != nil {
		return nil, err
	}
	if uid == 0 && gid == 0 {
		return nil, nil
	}
	return &Owner{UID: uid, GID: gid}, nil
}

// VolumeCaptureOptions describe the capture of one volume.
type VolumeCaptureOptions struct {
	// SandboxID and Name key the stat cache: the sandbox's previous
	// capture of the same volume vouches for its unchanged files.
	SandboxID string `json:"sandbox_id"`
	Name      string `json:"name"`
	Limits    Limits `json:"limits"`
	// Used is what the snapshot's parts captured before hold.
	Used    Usage `json:"used"`
	Workers int   `json:"workers,omitempty"`

	Done <-chan struct{} `json:"-"`
}

// CapturedVolume is a volume's capture: its part of the manifest, and the
// bytes it added to the store.
type CapturedVolume struct {
	Volume      Volume `json:"volume"`
	StoredBytes int64  `json:"stored_bytes"`
}

// CaptureVolume stores the content of the volume mounted at dir and
// returns its entries, with owners and full modes; no manifest is written
// (the caller's Capture writes one for the whole snapshot). It takes the
// shared lock, as a capture does.
func (s *Store) CaptureVolume(dir string, opts VolumeCaptureOptions) (CapturedVolume, error) {
	if !VolumeNamePattern.MatchString(opts.Name) {
		return CapturedVolume{}, fmt.Errorf("invalid volume name %q", opts.Name)
	}
	mode, uid, gid, err := rootStat(dir)
	if err != nil {
		return CapturedVolume{}, fmt.Errorf("volume %s: %w", opts.Name, err)
	}
	unlock, err := s.lock(false)
	if err != nil {
		return CapturedVolume{}, err
	}
	defer unlock()
	t, err := s.captureTree(dir, Filter{}, true, volumeCacheKey(opts.SandboxID, opts.Name), opts.Limits, opts.Used, opts.Workers, opts.Done)
	if err != nil {
		return CapturedVolume{}, fmt.Errorf("volume %s: %w", opts.Name, err)
	}
	return CapturedVolume{
		Volume:      Volume{Name: opts.Name, Mode: uint32(mode), UID: uid, GID: gid, Entries: t.entries, ScannedAtNs: t.scannedAtNs},
		StoredBytes: t.stored,
	}, nil
}

// volumeCacheKey names the stat cache of a sandbox's volume: latest/<sandbox>@<volume>.
func volumeCacheKey(sandboxID, volume string) string {
	if sandboxID == "" {
		return ""
	}
	return sandboxID + "@" + volume
}

// checkCacheKey accepts a sandbox id, or one with "@<volume name>".
func checkCacheKey(key string) error {
	sb, vol, isVolume := strings.Cut(key, "@")
	if err := CheckID(sb); err != nil {
		return err
	}
	if isVolume && !VolumeNamePattern.MatchString(vol) {
		return fmt.Errorf("invalid volume name %q", vol)
	}
	return nil
}

// RestoreVolume writes a captured volume into the directory target (the
// volume, mounted), as Restore writes a workspace: every object verified
// before anything in a non-empty target changes, owners and modes as
// captured, the volume root's included. The entries are checked as a
// manifest's are (no path may leave target).
func (s *Store) RestoreVolume(v Volume, target string, opts RestoreOptions) (RestoreResult, error) {
	m := &Manifest{ID: "volume-" + v.Name, Entries: v.Entries}
	m.seal()
	if err := checkEntries(m.ID, "volume:"+v.Name+"/", v.Entries); err != nil {
		return RestoreResult{}, err
	}
	opts.Owners, opts.Env = true, false
	res, err := s.RestoreManifest(m, nil, target, opts)
	if err != nil {
		return res, fmt.Errorf("volume %s: %w", v.Name, err)
	}
	// The root last: its mode may forbid the writes above to anyone but root.
	if err := os.Lchown(target, v.UID, v.GID); err != nil {
		return res, fmt.Errorf("volume %s: %w", v.Name, err)
	}
	if err := os.Chmod(target, fs.FileMode(v.Mode)); err != nil {
		return res, fmt.Errorf("volume %s: %w", v.Name, err)
	}
	return res, nil
}

// Verify reads every object m uses, the workspace's and the volumes', and
// checks its digest, naming the first file that fails. An in-place restore
// of a snapshot with volumes runs it before it changes anything: the
// volumes and the workspace are separate writes, and a bad object found
// after the first of them would leave the target half restored.
func (s *Store) Verify(m *Manifest, workers int) error {
	check := func(where string, entries []Entry) error {
		return forEachFile(entries, workers, nil, func(i int) error {
			e := entries[i]
			in, err := s.openObject(e.Digest)
			if err != nil {
				return fmt.Errorf("file %s%s: object %s is missing from the store: %w", where, e.Path, e.Digest, err)
			}
			defer func() { _ = in.Close() }() // only read
			h := sha256.New()
			if err := copyBuffered(h, in); err != nil {
				return fmt.Errorf("file %s%s: %w", where, e.Path, err)
			}
			if got := hex.EncodeToString(h.Sum(nil)); got != e.Digest {
				return fmt.Errorf("file %s%s: stored object is corrupt (sha256 %s, expected %s); nothing was restored", where, e.Path, got, e.Digest)
			}
			return nil
		})
	}
	if err := check("", m.Entries); err != nil {
		return err
	}
	for _, v := range m.Volumes {
		if err := check("volume:"+v.Name+"/", v.Entries); err != nil {
			return err
		}
	}
	return nil
}

// InPlace reports whether a restore into target writes over something (a
// non-empty directory) rather than into a new, empty one.
func InPlace(target string) bool { return !isEmptyDir(target) }
