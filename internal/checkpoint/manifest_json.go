package checkpoint

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

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
