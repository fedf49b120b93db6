package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The stat cache of a sandbox is a small file, latest/<sandbox>, written
// with each capture: the snapshot it came from, when that workspace was
// scanned, and per file its digest, size and mtime. Reading it is a fraction
// of decoding the manifest, which is what makes a capture after a small
// change cheap. It is only a cache: when it is missing, damaged (its own
// checksum does not match) or names a snapshot that no longer exists, the
// capture reads every file.
//
//	sandboxer-statcache 2 <snapshot id> <scanned_at_ns> <sha256 of the lines below>
//	<digest> <size> <mtime_ns> <path>
//	...
//
// In format 2 the lines are one zstd frame (a third of their size: they
// are mostly hex digests, and the store keeps one cache per sandbox and
// volume); format 1, the same lines uncompressed, is still read, so the
// first capture after an upgrade reads no more than the others.

const (
	statCacheMagic = "sandboxer-statcache 2"
	statCachePlain = "sandboxer-statcache 1"
)

// statCache is what a capture may trust without reading a file.
type statCache struct {
	files       map[string]cachedFile // by path
	scannedAtNs int64
}

type cachedFile struct {
	digest        string
	size, mtimeNs int64
}

// encodeStatCache is the stat cache of entries, scanned at scannedAtNs, as
// snapshot id captured them.
func encodeStatCache(id string, scannedAtNs int64, entries []Entry) []byte {
	body := make([]byte, 0, len(entries)*120)
	for _, e := range entries {
		// A path with a newline cannot be one line: such files are read every time.
		if e.Type == TypeFile && !strings.ContainsAny(e.Path, "\n\r") {
			body = append(body, e.Digest...)
			body = append(body, ' ')
			body = strconv.AppendInt(body, e.Size, 10)
			body = append(body, ' ')
			body = strconv.AppendInt(body, e.MtimeNs, 10)
			body = append(body, ' ')
			body = append(body, e.Path...)
			body = append(body, '\n')
		}
	}
	sum := sha256.Sum256(body)
	head := fmt.Sprintf("%s %s %d %s\n", statCacheMagic, id, scannedAtNs, hex.EncodeToString(sum[:]))
	return encodeAll(body, []byte(head))
}

// previous returns the stat cache of the sandbox's newest snapshot (key:
// the sandbox id), or of one of its volumes (volumeCacheKey).
func (s *Store) previous(key string) statCache {
	if key == "" || checkCacheKey(key) != nil {
		return statCache{}
	}
	c, err := s.readStatCache(key)
	if err != nil {
		return statCache{}
	}
	return c
}

func (s *Store) readStatCache(key string) (statCache, error) {
	data, err := os.ReadFile(s.latestPath(key))
	if err != nil {
		return statCache{}, err
	}
	head, body, ok := bytes.Cut(data, []byte("\n"))
	f := strings.Fields(string(head))
	if !ok || len(f) != 5 {
		return statCache{}, errors.New("bad stat cache header")
	}
	switch f[0] + " " + f[1] {
	case statCacheMagic:
		if body, err = unpackMetadata(body); err != nil {
			return statCache{}, fmt.Errorf("stat cache does not decompress: %w", err)
		}
	case statCachePlain:
	default:
		return statCache{}, errors.New("bad stat cache header")
	}
	sum := sha256.Sum256(body)
	if hex.EncodeToString(sum[:]) != f[4] {
		return statCache{}, errors.New("stat cache checksum mismatch")
	}
	// Trusted only while its snapshot is live: then garbage collection
	// (excluded by the capture's shared lock) has kept its objects.
	if _, err := os.Stat(s.manifestPath(f[2])); err != nil || CheckID(f[2]) != nil {
		return statCache{}, errors.New("stat cache names a snapshot that is gone")
	}
	// One string for the whole body: every path and digest below is a
	// slice of it, not an allocation of its own.
	text := string(body)
	c := statCache{files: make(map[string]cachedFile, strings.Count(text, "\n"))}
	c.scannedAtNs, _ = strconv.ParseInt(f[3], 10, 64)
	for text != "" {
		line, rest, _ := strings.Cut(text, "\n")
		text = rest
		digest, line, ok1 := strings.Cut(line, " ")
		size, line, ok2 := strings.Cut(line, " ")
		mtime, path, ok3 := strings.Cut(line, " ")
		n, err1 := strconv.ParseInt(size, 10, 64)
		t, err2 := strconv.ParseInt(mtime, 10, 64)
		if !ok1 || !ok2 || !ok3 || err1 != nil || err2 != nil || len(digest) != 64 {
			return statCache{}, errors.New("bad stat cache line")
		}
		c.files[path] = cachedFile{digest: digest, size: n, mtimeNs: t}
	}
	return c, nil
}
