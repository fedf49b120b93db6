// Package checkpoint is the snapshot format and the operations on it:
// capture a workspace into a content-addressed store, restore it (verifying
// every object first), diff, copy between stores, and garbage collection.
//
// It works on local paths only. On a remote host it runs inside the
// sandboxer agent (internal/agent), so file data never crosses the network
// except when a snapshot is transferred between hosts.
package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"iter"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/safepath"
)

// FormatVersion is the manifest format of a snapshot of a workspace
// alone; FormatVersionVolumes that of one holding volumes too, which an
// older agent refuses instead of restoring the workspace alone.
const (
	FormatVersion        = 1
	FormatVersionVolumes = 2
)

// Entry types.
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
)

// Entry is one path of a snapshot.
type Entry struct {
	Path   string `json:"path"` // slash-separated, relative to the workspace
	Type   string `json:"type"`
	Mode   uint32 `json:"mode"` // permission bits
	Size   int64  `json:"size,omitempty"`
	Digest string `json:"digest,omitempty"` // sha256 hex of a file's content
	Target string `json:"target,omitempty"` // symlink target, stored verbatim

	// MtimeNs lets the next capture of the same workspace skip reading files
	// whose size and mtime did not change. Not part of the digest.
	MtimeNs int64 `json:"mtime_ns,omitempty"`

	// UID and GID are the owner of a volume's entry (numbers, as the
	// volume had them), restored exactly. Workspace entries have none:
	// they belong to whoever restores them, as before.
	UID int `json:"uid,omitempty"`
	GID int `json:"gid,omitempty"`
}

// Volume is one named volume of a compose sandbox, as captured: its
// entries are relative to the volume's root, with owners and full modes
// (setuid, setgid and sticky bits included).
type Volume struct {
	Name string `json:"name"` // the compose volume name, e.g. "db-data"
	// The volume root's own mode and owner: a service may insist on them
	// (postgres refuses a data directory that is not its own, mode 0700).
	Mode    uint32  `json:"mode"`
	UID     int     `json:"uid,omitempty"`
	GID     int     `json:"gid,omitempty"`
	Entries []Entry `json:"entries"`
	// ScannedAtNs is when the volume was scanned (its stat cache's clock).
	ScannedAtNs int64 `json:"scanned_at_ns,omitempty"`
}

// VolumeNamePattern is what a captured volume may be called: a compose
// volume name, safe in file names and docker volume names.
var VolumeNamePattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$`)

// Manifest describes one snapshot. Its presence in the store is what makes
// the snapshot exist: it is written last, after every object.
type Manifest struct {
	Version     int               `json:"version"`
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	SandboxID   string            `json:"sandbox_id,omitempty"`
	Profile     string            `json:"profile,omitempty"`
	Source      string            `json:"source_snapshot_id,omitempty"` // set on copies
	CreatedAt   time.Time         `json:"created_at"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	Include     []string          `json:"include_paths,omitempty"`
	Exclude     []string          `json:"exclude_paths,omitempty"`
	Entries     []Entry           `json:"entries"`
	Volumes     []Volume          `json:"volumes,omitempty"`
	EnvNames    []string          `json:"env_names,omitempty"`  // values live in <id>.env
	EnvDigest   string            `json:"env_digest,omitempty"` // sha256 of the env file
	SizeBytes   int64             `json:"size_bytes"`
	FileCount   int               `json:"file_count"`
	StoredBytes int64             `json:"stored_bytes"` // new bytes this snapshot added
	Digest      string            `json:"digest"`       // sha256 of the canonical content

	// ScannedAtNs is the host's clock when the workspace was scanned: the
	// stat cache distrusts files modified close to it (see racyWindow).
	ScannedAtNs int64 `json:"scanned_at_ns,omitempty"`
}

// Filter returns the snapshot's scope.
func (m *Manifest) Filter() Filter { return Filter{Include: m.Include, Exclude: m.Exclude} }

// ComputeDigest returns "sha256:<hex>" over the canonical manifest: what
// the digest covers is the content (entries without mtimes, the filters, the
// env digest), not bookkeeping. The encoding is written by hand — NUL-
// separated fields, one entry per record — because it runs on every load
// and every capture, where a JSON round trip of 100,000 entries shows.
func (m *Manifest) ComputeDigest() string {
	h := sha256.New()
	buf := make([]byte, 0, 64<<10)
	field := func(f string) { buf = append(append(buf, f...), 0) }
	record := func() {
		buf = append(buf, '\n')
		if len(buf) > 60<<10 {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	field("sandboxer-manifest")
	field(strconv.Itoa(m.Version))
	field(m.EnvDigest)
	record()
	field("include")
	for _, p := range m.Include {
		field(p)
	}
	record()
	field("exclude")
	for _, p := range m.Exclude {
		field(p)
	}
	record()
	for i := range m.Entries {
		e := &m.Entries[i]
		field(e.Path)
		field(e.Type)
		buf = append(strconv.AppendUint(buf, uint64(e.Mode), 8), 0)
		buf = append(strconv.AppendInt(buf, e.Size, 10), 0)
		field(e.Digest)
		field(e.Target)
		record()
	}
	if m.Version >= FormatVersionVolumes {
		for _, v := range m.Volumes {
			field("volume")
			field(v.Name)
			buf = append(strconv.AppendUint(buf, uint64(v.Mode), 8), 0)
			buf = append(strconv.AppendInt(buf, int64(v.UID), 10), 0)
			buf = append(strconv.AppendInt(buf, int64(v.GID), 10), 0)
			record()
			for i := range v.Entries {
				e := &v.Entries[i]
				field(e.Path)
				field(e.Type)
				buf = append(strconv.AppendUint(buf, uint64(e.Mode), 8), 0)
				buf = append(strconv.AppendInt(buf, e.Size, 10), 0)
				field(e.Digest)
				field(e.Target)
				buf = append(strconv.AppendInt(buf, int64(e.UID), 10), 0)
				buf = append(strconv.AppendInt(buf, int64(e.GID), 10), 0)
				record()
			}
		}
	}
	h.Write(buf)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Files yields every entry of the snapshot, the workspace's and the
// volumes': what references objects (garbage collection, transfers).
func (m *Manifest) Files() iter.Seq[*Entry] {
	return func(yield func(*Entry) bool) {
		for i := range m.Entries {
			if !yield(&m.Entries[i]) {
				return
			}
		}
		for v := range m.Volumes {
			for i := range m.Volumes[v].Entries {
				if !yield(&m.Volumes[v].Entries[i]) {
					return
				}
			}
		}
	}
}

// VolumeNames lists the captured volumes' names.
func (m *Manifest) VolumeNames() []string {
	var names []string
	for _, v := range m.Volumes {
		names = append(names, v.Name)
	}
	return names
}

// Check verifies the manifest's own integrity and that no entry could
// escape the directory it is restored into.
func (m *Manifest) Check() error {
	if m.Version != FormatVersion && (m.Version != FormatVersionVolumes || len(m.Volumes) == 0) {
		return fmt.Errorf("snapshot %s: unsupported format version %d", m.ID, m.Version)
	}
	if got := m.ComputeDigest(); got != m.Digest {
		return fmt.Errorf("snapshot %s: manifest is corrupt (digest %s, recorded %s)", m.ID, got, m.Digest)
	}
	if err := checkEntries(m.ID, "", m.Entries); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, v := range m.Volumes {
		if !VolumeNamePattern.MatchString(v.Name) || seen[v.Name] || v.UID < 0 || v.GID < 0 {
			return fmt.Errorf("snapshot %s: refusing volume %q: not a compose volume name, or named twice", m.ID, v.Name)
		}
		seen[v.Name] = true
		if err := checkEntries(m.ID, "volume:"+v.Name+"/", v.Entries); err != nil {
			return err
		}
	}
	return nil
}

// checkEntries refuses entries that could escape the directory they are
// restored into, or that a restore would not know how to write.
func checkEntries(id, prefix string, entries []Entry) error {
	for _, e := range entries {
		if err := safepath.Relative(e.Path); err != nil {
			return fmt.Errorf("snapshot %s: refusing entry %s%s: %w", id, prefix, e.Path, err)
		}
		switch e.Type {
		case TypeFile:
			if len(e.Digest) != 64 {
				return fmt.Errorf("snapshot %s: entry %s%s has no valid digest", id, prefix, e.Path)
			}
		case TypeDir, TypeSymlink:
		default:
			return fmt.Errorf("snapshot %s: entry %s%s has unknown type %q", id, prefix, e.Path, e.Type)
		}
		if e.UID < 0 || e.GID < 0 {
			return fmt.Errorf("snapshot %s: entry %s%s has a negative owner", id, prefix, e.Path)
		}
	}
	return nil
}

// seal sorts entries, computes totals and the digest.
func (m *Manifest) seal() {
	byPath := func(a, b Entry) int { return strings.Compare(a.Path, b.Path) }
	if !slices.IsSortedFunc(m.Entries, byPath) { // a capture's scan returns them sorted
		slices.SortFunc(m.Entries, byPath)
	}
	slices.SortFunc(m.Volumes, func(a, b Volume) int { return strings.Compare(a.Name, b.Name) })
	for _, v := range m.Volumes {
		if !slices.IsSortedFunc(v.Entries, byPath) {
			slices.SortFunc(v.Entries, byPath)
		}
	}
	m.SizeBytes, m.FileCount = 0, 0
	for e := range m.Files() {
		if e.Type == TypeFile {
			m.SizeBytes += e.Size
			m.FileCount++
		}
	}
	m.Version = FormatVersion
	if len(m.Volumes) > 0 {
		m.Version = FormatVersionVolumes
	}
	m.Digest = m.ComputeDigest()
}

// Summary is a manifest without its entries: what listings return.
type Summary struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	SandboxID   string            `json:"sandbox_id,omitempty"`
	Profile     string            `json:"profile,omitempty"`
	Source      string            `json:"source_snapshot_id,omitempty"`
	CreatedAt   time.Time         `json:"created_at"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	Include     []string          `json:"include_paths,omitempty"`
	Exclude     []string          `json:"exclude_paths,omitempty"`
	EnvNames    []string          `json:"env_names,omitempty"`
	SizeBytes   int64             `json:"size_bytes"`
	FileCount   int               `json:"file_count"`
	StoredBytes int64             `json:"stored_bytes"`
	Digest      string            `json:"digest"`
	VolumeNames []string          `json:"volume_names,omitempty"`
}

// Summary returns m without entries.
func (m *Manifest) Summary() Summary {
	return Summary{m.ID, m.Name, m.Description, m.SandboxID, m.Profile, m.Source, m.CreatedAt, m.Metadata,
		m.Include, m.Exclude, m.EnvNames, m.SizeBytes, m.FileCount, m.StoredBytes, m.Digest, m.VolumeNames()}
}
