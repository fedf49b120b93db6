package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// A store's snapshots can be read without the store: the bytes of its
// manifest and env files, fetched however the caller can (a plan reads them
// from a host with one `cat`, installing and creating nothing), are decoded
// and verified here with the same checks Load and LoadEnv apply to local
// files. Nothing a store holds is trusted before these checks.

// SnapshotsDir is the store's directory of manifests and env files.
const SnapshotsDir = "snapshots"

// ManifestFile is the name of snapshot id's manifest in SnapshotsDir.
func ManifestFile(id string) string { return id + manifestExt }

// EnvFile is the name of snapshot id's captured env in SnapshotsDir.
func EnvFile(id string) string { return id + ".env" }

const manifestExt = ".json"

// ParseManifest decodes snapshot id's manifest and verifies it (format
// version, digest over the content, entry paths): a manifest changed by
// anything but a capture is refused, not believed.
func ParseManifest(id string, data []byte) (*Manifest, error) {
	if err := CheckID(id); err != nil {
		return nil, err
	}
	m, err := unpackManifest(data)
	if errors.Is(err, errNewerPacking) {
		return nil, fmt.Errorf("snapshot %s: %w", id, err)
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: manifest is corrupt: %w", id, err)
	}
	// A manifest renamed (or copied) to another snapshot's file name would
	// otherwise stand in for that snapshot: its digest still checks out.
	if m.ID != id {
		return nil, fmt.Errorf("snapshot %s: manifest %s holds snapshot %q, not %s: refusing it", id, ManifestFile(id), m.ID, id)
	}
	if err := m.Check(); err != nil {
		return nil, err
	}
	return m, nil
}

// ParseEnv decodes m's captured env, verified against the digest the
// manifest records. data is nil when the env file is missing.
func ParseEnv(m *Manifest, data []byte) (map[string]string, error) {
	if m.EnvDigest == "" {
		return map[string]string{}, nil
	}
	if data == nil {
		return nil, fmt.Errorf("snapshot %s: captured env is missing", m.ID)
	}
	if digestOf(data) != m.EnvDigest {
		return nil, fmt.Errorf("snapshot %s: captured env is corrupt (digest mismatch)", m.ID)
	}
	env := map[string]string{}
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, fmt.Errorf("snapshot %s: captured env is corrupt: %w", m.ID, err)
	}
	return env, nil
}

// IsManifestFile reports whether name, in SnapshotsDir, is a manifest.
func IsManifestFile(name string) bool { return strings.HasSuffix(name, manifestExt) }

// ParseListing verifies every manifest of a listing (file name in
// SnapshotsDir -> content) and returns their summaries, oldest first; never
// nil, so an empty store lists as [] rather than null.
func ParseListing(manifests map[string][]byte) ([]Summary, error) {
	out := make([]Summary, 0, len(manifests))
	for name, data := range manifests {
		m, err := ParseManifest(strings.TrimSuffix(name, manifestExt), data)
		if err != nil {
			return nil, err
		}
		out = append(out, m.Summary())
	}
	sortSummaries(out)
	return out, nil
}

// sortSummaries is the order of every listing: oldest first, ties by id so
// two listings of the same store agree.
func sortSummaries(list []Summary) {
	sort.Slice(list, func(i, j int) bool {
		if !list[i].CreatedAt.Equal(list[j].CreatedAt) {
			return list[i].CreatedAt.Before(list[j].CreatedAt)
		}
		return list[i].ID < list[j].ID
	})
}
