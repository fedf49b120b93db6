package hosts

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
	"time"
)

// copyUntil finds a mark wherever reads split it, copies exactly what comes
// before it and leaves what follows unread.
func TestCopyUntilAcrossReads(t *testing.T) {
	mark := []byte("0123456789abcdef")
	body := bytes.Repeat([]byte("0123456789abcde\n"), 300) // every prefix of the mark, never the mark
	stream := append(append(append([]byte{}, body...), mark...), "rest"...)
	for _, tc := range []struct {
		name string
		r    io.Reader
	}{
		{"one byte a read", iotest.OneByteReader(bytes.NewReader(stream))},
		{"half reads", iotest.HalfReader(bytes.NewReader(stream))},
		{"whole", bytes.NewReader(stream)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := bufio.NewReaderSize(tc.r, 16)
			var got bytes.Buffer
			if err := copyUntil(&got, r, mark); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), body) {
				t.Fatalf("copied %d bytes, want %d", got.Len(), len(body))
			}
			rest, _ := io.ReadAll(r)
			if string(rest) != "rest" {
				t.Fatalf("left %q unread, want %q", rest, "rest")
			}
		})
	}
	var sink bytes.Buffer
	err := copyUntil(&sink, bufio.NewReader(bytes.NewReader(body)), mark)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a stream without the mark: %v", err)
	}
}

// loop runs the shell's loop under this machine's sh, in a process group
// of its own (as sshd gives a session), and returns its input, its stdout
// and a function that waits for its end and returns its stderr.
func loop(t *testing.T) (io.WriteCloser, *bufio.Reader, func() (string, error)) {
	t.Helper()
	cmd := exec.Command("sh", "-c", shellScript)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	out := bufio.NewReader(pipe)
	if err := copyUntil(io.Discard, out, []byte(shellBanner)); err != nil {
		t.Fatalf("no banner: %v", err)
	}
	return in, out, func() (string, error) { err := cmd.Wait(); return stderr.String(), err }
}

func upTo(t *testing.T, out *bufio.Reader, mark string) string {
	t.Helper()
	var b bytes.Buffer
	if err := copyUntil(&b, out, []byte(mark)); err != nil {
		t.Fatalf("waiting for %q: %v (read %q)", mark, err, b.String())
	}
	return b.String()
}

func send(t *testing.T, in io.Writer, req string) {
	t.Helper()
	if _, err := io.WriteString(in, req); err != nil {
		t.Fatal(err)
	}
}

const testNonce = "00112233445566778899aabbccddeeff"

// The loop runs what ends with the mark line, with its output, stderr and
// exit status, and nothing that the stream cut short.
func TestShellScriptRunsOnlyWholeRequests(t *testing.T) {
	const n = testNonce
	dir := t.TempDir()
	whole := filepath.Join(dir, "whole")
	cut := filepath.Join(dir, "cut")
	in, out, wait := loop(t)

	send(t, in, n+"\nprintf 'a\\\\b  c'\necho err >&2\ntouch "+Quote(whole)+"\nexit 3\n"+n+"\n")
	upTo(t, out, n+" ack\n")
	if got := upTo(t, out, n+" end "); got != `a\b  c` {
		t.Fatalf("output %q", got)
	}
	if rc, _ := out.ReadString('\n'); rc != "3\n" {
		t.Fatalf("exit status line %q", rc)
	}
	if _, err := os.Stat(whole); err != nil {
		t.Fatalf("the whole request did not run: %v", err)
	}

	send(t, in, n+"\ntouch "+Quote(cut)+"\n") // no end line: the connection ended
	_ = in.Close()
	stderr, err := wait()
	if err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	if want := shellBanner + n + " ack\nerr\n" + n + " end\n"; stderr != want {
		t.Fatalf("stderr %q, want %q", stderr, want)
	}
	if _, err := os.Stat(cut); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the request cut short ran: %v", err)
	}
}

// Input while a command runs (the session ended) kills the command and
// what it started.
func TestShellScriptKillsOnInput(t *testing.T) {
	const n = testNonce
	late := filepath.Join(t.TempDir(), "late")
	in, out, wait := loop(t)
	send(t, in, n+"\n(sleep 60; touch "+Quote(late)+") & echo $!; wait\n"+n+"\n")
	upTo(t, out, n+" ack\n")
	child, err := out.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	send(t, in, "\n") // anything at all, as the end of the session is
	if _, err := wait(); err == nil {
		t.Fatal("the loop went on after input during a command")
	}
	waitGone(t, child)
}

// waitGone fails unless process pid is gone within 10 s: killed, it is
// gone once reaped (a zombie answers kill -0).
func waitGone(t *testing.T, pid string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); exec.Command("kill", "-0", strings.TrimSpace(pid)).Run() == nil; {
		if time.Now().After(deadline) {
			t.Fatalf("process %s still runs", strings.TrimSpace(pid))
		}
		time.Sleep(20 * time.Millisecond) // polling for the reaper
	}
}
