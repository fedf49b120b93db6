package hosts

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A copy that the host cannot unpack fails with tar's complaint and
// leaves no tar file in the directory.
func TestUnpackIntoFailureLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	err := unpackInto(context.Background(), &Local{Name: "local"}, dir, []byte("this is not a tar archive, not even close to one"))
	if err == nil {
		t.Fatal("unpacking garbage succeeded")
	}
	if !IsExitCode(err, 2) {
		t.Errorf("error %v, want tar's exit status 2", err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	hidden, _ := filepath.Glob(filepath.Join(dir, ".*"))
	if len(left)+len(hidden) != 0 {
		t.Errorf("left behind: %v %v", left, hidden)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("the directory itself went: %v", err)
	}
}

// A file written by a command that holds its content comes out byte for
// byte, every byte value included, through this machine's sh.
func TestInlineWriteIsExact(t *testing.T) {
	data := make([]byte, 0, 3*256)
	for range 3 {
		for c := range 256 {
			data = append(data, byte(c))
		}
	}
	data = append(data, "%s %% \\n \\\\ \\000 '\"$(x)`\n"...)
	// NULs before octal digits and others, and at the end.
	data = append(data, "\x000\x007\x008\x00\x00\x009\x00"...)
	// Content printf could take for options, were it the format as it is.
	for _, content := range [][]byte{data, []byte("-n"), []byte("--help\n"), []byte("-"), []byte("-v x=1\n")} {
		path := filepath.Join(t.TempDir(), "sub", "file")
		if err := (&Local{Name: "local"}).Run(t.Context(), inlineWrite(path, content, 0o640), nil, nil); err != nil {
			t.Fatalf("%.20q: %v", content, err)
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, content) {
			t.Fatalf("wrote %q (%v), want %q", got, err, content)
		}
		if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
			t.Fatalf("mode %o", st.Mode().Perm())
		}
		if bash, err := exec.LookPath("bash"); err == nil { // the other printf a host's sh may be
			path += ".bash"
			if out, err := exec.Command(bash, "-c", inlineWrite(path, content, 0o640)).CombinedOutput(); err != nil {
				t.Fatalf("bash, %.20q: %v: %s", content, err, out)
			}
			if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, content) {
				t.Fatalf("bash wrote %q (%v), want %q", got, err, content)
			}
		}
	}
}

// A local command past its deadline is killed with what it started, and
// Run returns: a child holding the output open does not keep it waiting.
func TestLocalCancelKillsTheCommandsGroup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	err := (&Local{Name: "local"}).Run(ctx, "sleep 6013 & echo $! > "+Quote(pidFile)+"; wait", nil, io.Discard)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run: %v", err)
	}
	pid, _ := os.ReadFile(pidFile)
	waitGone(t, string(pid))
}

// A failed write of a small file names the path, never its content: the
// command that held it would put the start of an env file's values in the
// diagnostic.
func TestFailedInlineWriteHidesTheContent(t *testing.T) {
	// Short, so that the command's start, which an error quotes, would
	// reach the content; under a file, so that nothing is written.
	path := "/dev/null/sbx/.env"
	err := WriteFile(t.Context(), &Local{Name: "local"}, path, []byte("DB_PASSWORD=hunter2\n"), 0o600)
	var ce *CommandError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), path) {
		t.Fatalf("want a command error naming %s, got %v", path, err)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("the error shows the content: %v", err)
	}
}

// A failed copy of a small repo names the directory, never the repo's
// content, which the command that made the directory held.
func TestFailedSmallCopyHidesTheContent(t *testing.T) {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, ".env"), []byte("DB_PASSWORD=hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := "/dev/null/sbx" // its parent is no directory: mkdir fails
	err := MakeDir(t.Context(), &Local{Name: "local"}, dir, src, "")
	var ce *CommandError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("want a command error naming %s, got %v", dir, err)
	}
	if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "printf") {
		t.Fatalf("the error shows the content: %v", err)
	}
}

// MakeDir's outcomes are framed (Ask): an exit status means failure only.
// A mkdir that fails with any status, 45 among them, is that failure, not
// "the directory exists"; a directory that exists, or a guard that is
// gone, is said so.
func TestMakeDirOutcomesAreFramed(t *testing.T) {
	shim := t.TempDir()
	if err := os.WriteFile(filepath.Join(shim, "mkdir"), []byte("#!/bin/sh\necho 'mkdir: no space left' >&2\nexit 45\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	local := &Local{Name: "local"}
	dir := filepath.Join(t.TempDir(), "ws")
	t.Setenv("PATH", shim+":"+os.Getenv("PATH"))
	err := MakeDir(t.Context(), local, dir, "", "")
	if err == nil || errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("a failed mkdir (status 45) gave %v, want its own failure", err)
	}
	t.Setenv("PATH", strings.TrimPrefix(os.Getenv("PATH"), shim+":"))
	if err := MakeDir(t.Context(), local, dir, "", ""); err != nil {
		t.Fatal(err)
	}
	if err := MakeDir(t.Context(), local, dir, "", ""); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("an existing directory gave %v, want fs.ErrExist", err)
	}
	if err := MakeDir(t.Context(), local, dir+"2", "", filepath.Join(t.TempDir(), "gone")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing guard gave %v, want fs.ErrNotExist", err)
	}
}
