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

// The stat cache of a sandbox is a small text file, latest/<sandbox>, written
// with each capture: the snapshot it came from, when that workspace was
// scanned, and per file its digest, size and mtime. Reading it is a fraction
// of decoding the manifest, which is what makes a capture after a small
// change cheap. It is only a cache: when it is missing, damaged (its own
// checksum does not match) or names a snapshot that no longer exists, the
// capture reads every file.
//
//	sandboxer-statcache 1 <snapshot id> <scanned_at_ns> <sha256 of the lines below>
//	<digest> <size> <mtime_ns> <path>
//	...

const statCacheMagic = "sandboxer-statcache 1"

// statCache is what a capture may trust without reading a file.
type statCache struct {
	entries     map[string]Entry
	scannedAtNs int64
}

func encodeStatCache(m *Manifest) []byte {
	body := make([]byte, 0, len(m.Entries)*120)
	for _, e := range m.Entries {
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
	head := fmt.Sprintf("%s %s %d %s\n", statCacheMagic, m.ID, m.ScannedAtNs, hex.EncodeToString(sum[:]))
	return append([]byte(head), body...)
}

// previous returns the stat cache of the sandbox's newest snapshot.
func (s *Store) previous(sandboxID string) statCache {
	if sandboxID == "" || CheckID(sandboxID) != nil {
		return statCache{}
	}
	c, err := s.readStatCache(sandboxID)
	if err != nil {
		return statCache{}
	}
	return c
}

func (s *Store) readStatCache(sandboxID string) (statCache, error) {
	data, err := os.ReadFile(s.latestPath(sandboxID))
	if err != nil {
		return statCache{}, err
	}
	head, body, ok := bytes.Cut(data, []byte("\n"))
	f := strings.Fields(string(head))
	if !ok || len(f) != 5 || f[0]+" "+f[1] != statCacheMagic {
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
	c := statCache{entries: map[string]Entry{}}
	c.scannedAtNs, _ = strconv.ParseInt(f[3], 10, 64)
	for _, line := range strings.Split(string(body), "\n") {
		parts := strings.SplitN(line, " ", 4)
		if len(parts) != 4 {
			continue
		}
		size, err1 := strconv.ParseInt(parts[1], 10, 64)
		mtime, err2 := strconv.ParseInt(parts[2], 10, 64)
		if err1 != nil || err2 != nil || len(parts[0]) != 64 {
			return statCache{}, errors.New("bad stat cache line")
		}
		c.entries[parts[3]] = Entry{Path: parts[3], Type: TypeFile, Size: size, MtimeNs: mtime, Digest: parts[0]}
	}
	return c, nil
}
