package checkpoint

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"
)

// A manifest is stored packed: a line naming the packing, then its JSON
// (encodeManifest), compressed as one zstd frame, in base64 on one line:
//
//	sandboxer-manifest 3 zstd base64
//	KLUv/WBYDp2e...
//
// JSON spends most of an entry on names and hex; packed, the manifest of
// 5,000 files takes 248 KB instead of 825 KB, which is what a store with
// many snapshots (and a plan reading them) pays for each.
//
//   - base64, not raw zstd: a plan prints manifests with `cat`, framed by
//     NUL bytes (agent.readSnapshotFiles), and base64 never holds one.
//   - The file keeps its .json name, and a packed manifest is not JSON, on
//     purpose: an older agent's garbage collection lists snapshots/*.json
//     and stops, keeping every object, at a manifest it cannot decode. A
//     manifest it did not list, or one that decoded as JSON without its
//     entries (an envelope), would have its objects collected. (An older
//     agent now refuses the whole store by its format, 3: store.go; an
//     older provider's plan, reading without its agent, refuses a packed
//     manifest as corrupt.)
//
// The 3 follows the manifest's own versions, 1 and 2 (a workspace alone,
// with volumes), which the packed JSON still carries. Manifests written
// before (plain JSON) are read as they are.
const packedManifestHeader = "sandboxer-manifest 3 zstd base64\n"

// packedPrefix starts any packing, this one or one to come.
const packedPrefix = "sandboxer-manifest "

// errNewerPacking is a manifest packed in a way this code does not know.
var errNewerPacking = errors.New("manifest is packed by a newer provider")

// maxManifestBytes bounds a packed manifest's JSON (about 3 million
// entries) and a stat cache's lines: a damaged or hostile one cannot make
// its reader (the provider, reading a host's store) decompress without end.
const maxManifestBytes = 512 << 20

// packManifest returns m as stored.
func packManifest(m *Manifest) ([]byte, error) {
	data, err := encodeManifest(m)
	if err != nil {
		return nil, err
	}
	z := manifestEncoder().EncodeAll(data, make([]byte, 0, len(data)/3))
	out := make([]byte, len(packedManifestHeader)+base64.StdEncoding.EncodedLen(len(z))+1)
	n := copy(out, packedManifestHeader)
	base64.StdEncoding.Encode(out[n:], z)
	out[len(out)-1] = '\n'
	return out, nil
}

// manifestEncoder packs manifests at zstd's fastest level (which, on
// manifests, also packs smallest) with a checksum of the frame: a manifest
// damaged in any byte fails to unpack, bookkeeping the digest does not
// cover (mtimes) included.
var manifestEncoder = sync.OnceValue(func() *zstd.Encoder {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithWindowSize(windowSize))
	if err != nil {
		panic(err) // only invalid options fail, and these are constant
	}
	return enc
})

// unpackMetadata decompresses a packed manifest's or a stat cache's frame,
// up to maxManifestBytes. It streams: zstd's DecodeAll allocates up front
// whatever size a frame's header claims, so a few hostile bytes claiming
// the limit would cost all of it.
func unpackMetadata(z []byte) ([]byte, error) {
	r, err := decoding(io.NopCloser(bytes.NewReader(z)))
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }() // only read
	out, err := io.ReadAll(io.LimitReader(r, maxManifestBytes+1))
	if err != nil {
		return nil, err
	}
	if len(out) > maxManifestBytes {
		return nil, fmt.Errorf("more than %d MiB once decompressed", maxManifestBytes>>20)
	}
	return out, nil
}

// unpackManifest decodes a stored manifest, packed or plain JSON, without
// checking it (ParseManifest does).
func unpackManifest(data []byte) (*Manifest, error) {
	if bytes.HasPrefix(data, []byte(packedPrefix)) {
		body, ok := bytes.CutPrefix(data, []byte(packedManifestHeader))
		if !ok {
			head, _, _ := bytes.Cut(data, []byte("\n"))
			return nil, fmt.Errorf("%w (%q): upgrade the provider to read it", errNewerPacking, head)
		}
		z, err := base64.StdEncoding.AppendDecode(nil, bytes.TrimSuffix(body, []byte("\n")))
		if err != nil {
			return nil, err
		}
		if data, err = unpackMetadata(z); err != nil {
			return nil, err
		}
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// encodeManifest returns m as JSON, as json.Marshal would (json.Unmarshal
// reads it back; Load does). The entries, nearly all of the bytes, are
// written by hand: through reflection, encoding 20,000 of them took a
// quarter of a capture after a small change.
func encodeManifest(m *Manifest) ([]byte, error) {
	head, err := json.Marshal(struct {
		*Manifest
		// Shadows Manifest.Entries (a shallower field of the same JSON name
		// wins) and, nil, is omitted: the entries are appended below.
		Entries *struct{} `json:"entries,omitempty"`
	}{Manifest: m})
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(head)+len(m.Entries)*192)
	b = append(b, head[:len(head)-1]...) // without its closing brace
	b = append(b, `,"entries":[`...)
	for i := range m.Entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendEntryJSON(b, &m.Entries[i])
	}
	return append(b, "]}"...), nil
}

// appendEntryJSON appends e as json.Marshal would (same names, same
// omitempty fields).
func appendEntryJSON(b []byte, e *Entry) []byte {
	b = append(b, `{"path":`...)
	b = appendJSONString(b, e.Path)
	b = append(b, `,"type":`...)
	b = appendJSONString(b, e.Type)
	b = append(b, `,"mode":`...)
	b = strconv.AppendUint(b, uint64(e.Mode), 10)
	if e.Size != 0 {
		b = append(b, `,"size":`...)
		b = strconv.AppendInt(b, e.Size, 10)
	}
	if e.Digest != "" {
		b = append(b, `,"digest":`...)
		b = appendJSONString(b, e.Digest)
	}
	if e.Target != "" {
		b = append(b, `,"target":`...)
		b = appendJSONString(b, e.Target)
	}
	if e.MtimeNs != 0 {
		b = append(b, `,"mtime_ns":`...)
		b = strconv.AppendInt(b, e.MtimeNs, 10)
	}
	if e.UID != 0 {
		b = append(b, `,"uid":`...)
		b = strconv.AppendInt(b, int64(e.UID), 10)
	}
	if e.GID != 0 {
		b = append(b, `,"gid":`...)
		b = strconv.AppendInt(b, int64(e.GID), 10)
	}
	return append(b, '}')
}

// appendJSONString quotes s. Plain strings (the usual path) are copied as
// they are; anything that needs escaping goes through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
