package checkpoint

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func sampleManifest() *Manifest {
	return &Manifest{
		Version: FormatVersion, ID: "snap-1", Name: `name "quoted" <b>`, Description: "line\nbreak\ttab",
		SandboxID: "sbx1", Profile: "compose-ssh", Source: "snap-0",
		CreatedAt: time.Date(2026, 11, 23, 10, 0, 0, 5, time.UTC),
		Metadata:  map[string]string{"k": "v", "ünï": "\u2028"},
		Include:   []string{"src/**"}, Exclude: []string{"**/*.log", "node_modules"},
		EnvNames: []string{"A"}, EnvDigest: strings.Repeat("e", 64),
		SizeBytes: 12, FileCount: 2, StoredBytes: 7, ScannedAtNs: 1234567890123,
		Entries: []Entry{
			{Path: "a dir", Type: TypeDir, Mode: 0o755},
			{Path: "a dir/plain.txt", Type: TypeFile, Mode: 0o644, Size: 5, Digest: strings.Repeat("a", 64), MtimeNs: 99},
			{Path: `odd "name"\with` + "\x01ctl and ü and \u2029", Type: TypeFile, Mode: 0o600, Size: 7, Digest: strings.Repeat("b", 64)},
			{Path: "empty", Type: TypeFile, Mode: 0o644, Digest: strings.Repeat("c", 64)},
			{Path: "link", Type: TypeSymlink, Mode: 0o777, Target: "../élsewhere<&>"},
		},
	}
}

// The hand-written encoder must read back exactly as json.Marshal's output does.
func TestEncodeManifestMatchesEncodingJSON(t *testing.T) {
	for _, m := range []*Manifest{sampleManifest(), {Version: FormatVersion, ID: "empty", Entries: []Entry{}}} {
		m.Digest = m.ComputeDigest()
		ours, err := encodeManifest(m)
		if err != nil {
			t.Fatal(err)
		}
		theirs, _ := json.Marshal(m)
		var a, b map[string]any
		if err := json.Unmarshal(ours, &a); err != nil {
			t.Fatalf("encodeManifest wrote invalid JSON: %v\n%s", err, ours)
		}
		if err := json.Unmarshal(theirs, &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("encodeManifest differs from json.Marshal:\n ours   %s\n theirs %s", ours, theirs)
		}
		var back Manifest
		if err := json.Unmarshal(ours, &back); err != nil {
			t.Fatal(err)
		}
		if err := back.Check(); err != nil {
			t.Fatalf("manifest does not verify after the round trip: %v", err)
		}
	}
}

// Snapshots already on hosts must keep verifying: the canonical digest of a
// fixed manifest is pinned.
func TestManifestDigestIsStable(t *testing.T) {
	const want = "sha256:856c6ab3aa9fba7c6660ef548b78f17b6f434c81164f3e38de776d114a8e6fd8"
	if got := sampleManifest().ComputeDigest(); got != want {
		t.Fatalf("canonical digest changed: got %s, want %s", got, want)
	}
}
