package checkpoint

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Copy makes snapshot newID (named name) with the same content as id, in
// this store: objects are shared, so it costs one manifest.
func (s *Store) Copy(id, newID, name string, now time.Time) (*Manifest, error) {
	m, err := s.Load(id)
	if err != nil {
		return nil, err
	}
	env, err := s.LoadEnv(m)
	if err != nil {
		return nil, err
	}
	return s.Import(m, env, newID, name, now)
}

// Import writes manifest m (from this or another store) as snapshot newID.
// Every object it references must already be here (see ImportObjects).
func (s *Store) Import(m *Manifest, env map[string]string, newID, name string, now time.Time) (*Manifest, error) {
	if err := CheckID(newID); err != nil {
		return nil, err
	}
	if err := m.Check(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(s.manifestPath(newID)); err == nil {
		return nil, fmt.Errorf("snapshot %s already exists", newID)
	}
	unlock, err := s.lock(false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	for e := range m.Files() {
		if e.Type == TypeFile && !s.hasObject(e.Digest) {
			return nil, fmt.Errorf("file %s: object %s is not in the store", e.Path, e.Digest)
		}
	}
	cp := *m
	cp.Source, cp.ID, cp.Name, cp.CreatedAt, cp.StoredBytes = m.ID, newID, name, now.UTC(), 0
	cp.EnvDigest, cp.EnvNames = "", nil
	if err := s.save(&cp, env); err != nil {
		return nil, err
	}
	return &cp, nil
}

// Missing returns the digests of m's objects this store does not have.
func (s *Store) Missing(digests []string) []string {
	var out []string
	for _, d := range digests {
		if !s.hasObject(d) {
			out = append(out, d)
		}
	}
	return out
}

// ExportObjects writes the named objects as a tar stream, each as stored:
// entry name = digest, or digest.zst for a compressed object.
func (s *Store) ExportObjects(w io.Writer, digests []string) error {
	tw := tar.NewWriter(w)
	for _, d := range digests {
		if len(d) != 64 {
			return fmt.Errorf("invalid object digest %q", d)
		}
		p, compressed, err := s.objectFile(d)
		if err != nil {
			return fmt.Errorf("object %s: %w", d, err)
		}
		name := d
		if compressed {
			name += compressedSuffix
		}
		f, err := os.Open(p)
		if err != nil {
			return fmt.Errorf("object %s: %w", d, err)
		}
		st, err := f.Stat()
		if err == nil {
			err = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: st.Size(), Typeflag: tar.TypeReg})
		}
		if err == nil {
			_, err = io.Copy(tw, f)
		}
		_ = f.Close() // only read
		if err != nil {
			return fmt.Errorf("object %s: %w", d, err)
		}
	}
	return tw.Close()
}

// ImportObjects reads a tar stream of objects (ExportObjects'), verifying
// each against the digest it is named by before it enters the store, as it
// came: raw, or compressed (then verified by decompressing it). It returns
// the bytes added.
func (s *Store) ImportObjects(r io.Reader) (int64, error) {
	unlock, err := s.lock(false)
	if err != nil {
		return 0, err
	}
	defer unlock()
	tr := tar.NewReader(r)
	var added int64
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return added, nil
		}
		if err != nil {
			return added, err
		}
		digest, compressed := strings.CutSuffix(hdr.Name, compressedSuffix)
		if len(digest) != 64 || hdr.Typeflag != tar.TypeReg || isSparse(hdr) {
			return added, fmt.Errorf("unexpected entry %q in an object stream", hdr.Name)
		}
		tmp, err := s.tempFile()
		if err != nil {
			return added, err
		}
		// Not a decompression: with sparse entries refused above, an entry
		// yields exactly the hdr.Size bytes the stream carries for it.
		n, err := io.Copy(tmp, io.LimitReader(tr, hdr.Size))
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		// Verified before it gets a name: a digest that is not the content's
		// (a path, say) never becomes a file name.
		if err == nil {
			err = verifyObject(tmp.Name(), compressed, digest)
		}
		if err == nil && !s.hasObject(digest) {
			final := s.objectPath(digest)
			if compressed {
				final = s.compressedPath(digest)
			}
			err = s.commit(tmp.Name(), final)
			added += n
		}
		_ = os.Remove(tmp.Name()) // gone once committed; otherwise best-effort cleanup
		if err != nil {
			return added, err
		}
	}
}

// isSparse reports whether hdr is a PAX sparse file, which tar.Reader would
// expand to hdr.Size bytes from a far shorter stream (ExportObjects never
// writes one). The old GNU sparse type is refused by its Typeflag.
func isSparse(hdr *tar.Header) bool {
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}
