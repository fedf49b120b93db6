// Package localdir reads a directory on the machine running the provider:
// a stable content hash (so edits show up in a plan) and a tar stream of it
// (so it can be copied to a host over the transport's stdin).
package localdir

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// entry is one file, directory or symlink below the root.
type entry struct {
	rel  string // slash-separated, relative to the root
	info fs.FileInfo
	link string // symlink target
}

// root resolves dir when it is itself a symlink (a monorepo or CI checkout
// often links the app's directory): the tree it points to is what is hashed
// and copied, as `rsync dir/ dest/` would. Links inside the tree stay links.
func root(dir string) (string, error) {
	st, err := os.Lstat(dir)
	if err != nil || st.Mode()&fs.ModeSymlink == 0 {
		return dir, err
	}
	return filepath.EvalSymlinks(dir)
}

// walk lists the entries of dir (resolved by root) in a stable order.
// Sockets, devices and pipes are skipped: they cannot be copied meaningfully.
func walk(dir string) ([]entry, error) {
	var out []entry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		e := entry{rel: filepath.ToSlash(rel), info: info}
		switch mode := info.Mode(); {
		case mode.IsRegular(), mode.IsDir():
		case mode&fs.ModeSymlink != 0:
			if e.link, err = os.Readlink(p); err != nil {
				return err
			}
		default:
			return nil
		}
		out = append(out, e)
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].rel < out[j].rel })
	return out, err
}

// Hash returns "sha256:<hex>" over every path, type, permission, symlink
// target and file content below dir. Modification times are left out so
// that a fresh checkout of the same content hashes the same.
func Hash(dir string) (string, error) {
	dir, err := root(dir)
	if err != nil {
		return "", err
	}
	entries, err := walk(dir)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, e := range entries {
		mode := e.info.Mode()
		_, _ = fmt.Fprintf(h, "%s\x00%o\x00%s\x00", e.rel, mode&(fs.ModeType|fs.ModePerm), e.link) // a hash never fails to write
		if mode.IsRegular() {
			if err := copyFile(h, filepath.Join(dir, filepath.FromSlash(e.rel))); err != nil {
				return "", err
			}
		}
		h.Write([]byte{0})
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// WriteTar writes dir's contents as a tar stream rooted at ".".
// Symlinks are stored as links, never followed.
func WriteTar(w io.Writer, dir string) error {
	dir, err := root(dir)
	if err != nil {
		return err
	}
	entries, err := walk(dir)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	for _, e := range entries {
		hdr, err := tar.FileInfoHeader(e.info, e.link)
		if err != nil {
			return err
		}
		hdr.Name = e.rel
		if e.info.IsDir() {
			hdr.Name += "/"
		}
		// Ownership on the host is the SSH user's, not the client's.
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if e.info.Mode().IsRegular() {
			if err := copyFile(tw, filepath.Join(dir, filepath.FromSlash(e.rel))); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

// copyFile copies the file at path to w (a hash or a tar stream).
func copyFile(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // only read
	_, err = io.Copy(w, f)
	return err
}
