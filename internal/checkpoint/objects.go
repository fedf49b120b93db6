package checkpoint

import (
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

	"github.com/klauspost/compress/zstd"
)

// An object is the content of a file, named by the sha256 of that content.
// It is stored either raw, objects/ab/cdef…, or zstd-compressed,
// objects/ab/cdef….zst: the name never depends on how it is stored, so
// deduplication and verification are the same for both, and stores written
// before compression existed (raw objects only) read as they always did.
// A file is compressed when its first compressSample bytes shrink by at
// least an eighth at zstd's fastest level; random or already compressed
// data (images, archives) is stored raw and costs only that sample.

// compressedSuffix marks a zstd-compressed object file.
const compressedSuffix = ".zst"

// compressSample is how much of a file decides whether it is compressed.
const compressSample = 64 << 10

// windowSize bounds the memory an object's decoder needs: the encoder
// never uses more, and the decoder refuses streams that would.
const windowSize = 4 << 20

func mustEncoder() *zstd.Encoder {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(windowSize), zstd.WithEncoderCRC(false))
	if err != nil {
		panic(err) // only invalid options fail, and these are constant
	}
	return enc
}

// encoders hold an encoder per goroutine: one Encoder with concurrency 1
// runs one EncodeAll at a time, and would make every capture worker wait
// for the others' compression.
var encoders = sync.Pool{New: func() any { return mustEncoder() }}

// encodeAll appends src, compressed as one zstd frame, to dst.
func encodeAll(src, dst []byte) []byte {
	enc, ok := encoders.Get().(*zstd.Encoder)
	if !ok { // never: the pool holds nothing else
		enc = mustEncoder()
	}
	defer encoders.Put(enc)
	return enc.EncodeAll(src, dst)
}

var decoders = sync.Pool{New: func() any {
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(windowSize))
	if err != nil {
		panic(err) // only invalid options fail, and these are constant
	}
	return dec
}}

func (s *Store) objectPath(digest string) string {
	return filepath.Join(s.Dir, "objects", digest[:2], digest[2:])
}

func (s *Store) compressedPath(digest string) string { return s.objectPath(digest) + compressedSuffix }

// objectFile is the path of digest's object as stored, and whether it is
// compressed; fs.ErrNotExist when the store has neither form.
func (s *Store) objectFile(digest string) (string, bool, error) {
	p := s.objectPath(digest)
	if _, err := os.Stat(p); err == nil {
		return p, false, nil
	}
	if _, err := os.Stat(p + compressedSuffix); err != nil {
		return "", false, err
	}
	return p + compressedSuffix, true, nil
}

func (s *Store) hasObject(digest string) bool {
	_, _, err := s.objectFile(digest)
	return err == nil
}

// objectDigest is the digest an object file's base name (under its
// two-character directory dir) stands for.
func objectDigest(dir, name string) string {
	return dir + strings.TrimSuffix(name, compressedSuffix)
}

// openObject returns the content of digest's object, decompressed.
func (s *Store) openObject(digest string) (io.ReadCloser, error) {
	p, compressed, err := s.objectFile(digest)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil || !compressed {
		return f, err
	}
	return decoding(f)
}

// decoding reads the zstd stream of f, closing f when closed.
func decoding(f io.ReadCloser) (io.ReadCloser, error) {
	dec, ok := decoders.Get().(*zstd.Decoder)
	if !ok { // never: the pool holds nothing else
		return nil, errors.New("checkpoint: decoder pool holds something else")
	}
	if err := dec.Reset(f); err != nil {
		decoders.Put(dec)
		_ = f.Close() // only read
		return nil, err
	}
	return &decodingReader{dec: dec, f: f}, nil
}

type decodingReader struct {
	dec *zstd.Decoder
	f   io.ReadCloser
}

func (r *decodingReader) Read(p []byte) (int, error) { return r.dec.Read(p) }

func (r *decodingReader) Close() error {
	if r.dec != nil {
		_ = r.dec.Reset(nil) // drops its reference to f; an error is only "no input"
		decoders.Put(r.dec)
		r.dec = nil
	}
	return r.f.Close()
}

// writeObject copies src to dst, zstd-compressed when its first bytes
// compress well, hashing the uncompressed content on the way. It returns
// the content's digest and size, and whether dst got it compressed.
func writeObject(dst io.Writer, src io.Reader) (digest string, size int64, compressed bool, err error) {
	bp := copyBuffer()
	defer copyBuffers.Put(bp)
	buf := *bp
	head, err := io.ReadFull(src, buf[:compressSample])
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return "", 0, false, err
	}
	compressed = compresses(buf[:head], buf[compressSample:compressSample])
	w := dst
	var enc *zstd.Encoder
	if compressed {
		var ok bool
		if enc, ok = encoders.Get().(*zstd.Encoder); !ok { // never: the pool holds nothing else
			return "", 0, false, errors.New("checkpoint: encoder pool holds something else")
		}
		defer encoders.Put(enc)
		enc.Reset(dst)
		w = enc
	}
	h := sha256.New()
	mw := io.MultiWriter(w, h)
	if _, err := mw.Write(buf[:head]); err != nil {
		return "", 0, false, err
	}
	n := int64(head)
	if head == compressSample { // more may follow
		var m int64
		m, err = io.CopyBuffer(mw, struct{ io.Reader }{src}, buf)
		n += m
		if err != nil {
			return "", 0, false, err
		}
	}
	if enc != nil {
		if err := enc.Close(); err != nil {
			return "", 0, false, err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), n, compressed, nil
}

// compresses reports whether content whose first bytes are head is worth
// compressing: head shrinks by at least an eighth at zstd's fastest level.
// scratch (empty, with capacity) takes the compressed sample.
func compresses(head, scratch []byte) bool {
	if len(head) > compressSample {
		head = head[:compressSample]
	}
	return len(head) > 0 && len(encodeAll(head, scratch)) <= len(head)-len(head)/8
}

// storeSmall stores data, a whole file's content, and sets e's digest and
// size. Content the store has costs no write at all; new content is written
// under a temp name in its object's directory and renamed there, so that
// parallel writers contend for no directory but their objects' (a rename
// from tmp/ into objects/ locks the whole filesystem's renames). It returns
// the bytes added to the store.
func (s *Store) storeSmall(data []byte, e *Entry) (int64, error) {
	sum := sha256.Sum256(data)
	e.Digest, e.Size = hex.EncodeToString(sum[:]), int64(len(data))
	if s.hasObject(e.Digest) {
		return 0, nil
	}
	bp := copyBuffer()
	defer copyBuffers.Put(bp)
	body, final := data, s.objectPath(e.Digest)
	if compresses(data, (*bp)[:0]) {
		body, final = encodeAll(data, (*bp)[:0]), s.compressedPath(e.Digest)
	}
	if err := s.writeObjectFile(final, body); err != nil {
		return 0, err
	}
	return int64(len(body)), nil
}

// verifyObject checks that the object file at p (compressed or not) holds
// the content named digest, reading it whole.
func verifyObject(p string, compressed bool, digest string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	var r io.ReadCloser = f
	if compressed {
		if r, err = decoding(f); err != nil {
			return fmt.Errorf("object %s: %w", digest, err)
		}
	}
	defer func() { _ = r.Close() }() // only read
	h := sha256.New()
	if err := copyBuffered(h, r); err != nil {
		return fmt.Errorf("object %s: %w", digest, err)
	}
	if hex.EncodeToString(h.Sum(nil)) != digest {
		return fmt.Errorf("object %s arrived corrupt", digest)
	}
	return nil
}

// VerifyObjects checks every object of the store at dir against its name,
// reading each whole (decompressed when compressed); it changes nothing.
// It returns every mismatch found, joined; nil when all hold what their
// names say.
func VerifyObjects(dir string) error {
	var bad []error
	err := filepath.WalkDir(filepath.Join(dir, "objects"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), objectTempPrefix) {
			return err // an object being written is not one yet
		}
		digest := objectDigest(filepath.Base(filepath.Dir(p)), d.Name())
		if verr := verifyObject(p, strings.HasSuffix(d.Name(), compressedSuffix), digest); verr != nil {
			bad = append(bad, fmt.Errorf("%s: %w", p, verr))
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return errors.Join(bad...)
}
