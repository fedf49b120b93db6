package hosts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/localdir"
)

// Host is a place sandboxes live: a transport plus the directory under which
// every sandbox workspace, record and store on that host is kept.
type Host struct {
	Transport
	// RootDir is absolute, or relative to the SSH user's home directory.
	RootDir string
	Local   bool
	// PublishAddress is the host address compose sandboxes publish ports
	// on when their file names none ("": all interfaces, as compose does).
	PublishAddress string
	// EndpointHost is the name or address clients reach published ports
	// at (the host block's endpoint_host, default the host of its address).
	EndpointHost string
}

// DefaultLocalRootDir is where sandboxes live on the built-in host "local".
func DefaultLocalRootDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "sandboxer")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "sandboxer")
	}
	return filepath.Join(home, ".local", "share", "sandboxer")
}

// DefaultRemoteRootDir is where sandboxes live on an SSH host when its block
// sets no root_dir: relative, so it lands in the SSH user's home directory.
const DefaultRemoteRootDir = "sandboxer"

// Run runs script on the host's transport and logs, at DEBUG, the host,
// the command (its first commandLogBytes bytes), how long it took and how
// it ended: where an apply's time goes, for users too (TF_LOG_PROVIDER=DEBUG).
// A script may carry content (a rendered compose file): what is logged of
// it is what Shown keeps.
func (h *Host) Run(ctx context.Context, script string, stdin io.Reader, stdout io.Writer) error {
	start := time.Now()
	err := h.Transport.Run(ctx, script, stdin, stdout)
	logCommand(ctx, h.Host(), commandName(script), start, err)
	return err
}

// logCommand logs a host command, named by name, that took since start (at
// DEBUG: where an apply's time goes).
func logCommand(ctx context.Context, host, name string, start time.Time, err error) {
	fields := map[string]any{"host": host, "command": name, "duration_ms": time.Since(start).Milliseconds()}
	if err != nil {
		fields["error"] = err.Error()
	}
	tflog.Debug(ctx, "host command", fields)
}

// commandLogBytes bounds a logged command: enough to tell commands apart.
const commandLogBytes = 160

// commandName is script on one line, its content not shown (Shown),
// shortened for a log.
func commandName(script string) string {
	s := strings.Join(strings.Fields(Shown(script)), " ")
	if len(s) > commandLogBytes {
		s = s[:commandLogBytes] + "..."
	}
	return s
}

// Path joins elements below the root directory (slash-separated: hosts are POSIX).
func (h *Host) Path(elem ...string) string {
	return strings.Join(append([]string{strings.TrimRight(h.RootDir, "/")}, elem...), "/")
}

// WriteFile atomically replaces path on the host with data: written beside
// it under a temporary name, then renamed, so a reader never sees half a file.
func WriteFile(ctx context.Context, t Transport, path string, data []byte, mode os.FileMode) error {
	return Upload(ctx, t, path, bytes.NewReader(data), mode)
}

// Upload is WriteFile for a stream. A small file of an SSH transport may go
// through a shell it has idle (SSH.WriteSmallFile). Otherwise a transport
// that is a FileWriter (SSH, through sftp) writes the file itself; when it
// is not, or its host cannot take files that way (no sftp subsystem), the
// data goes through a shell pipeline on the transport, with the same result.
func Upload(ctx context.Context, t Transport, path string, r io.Reader, mode os.FileMode) error {
	// A small file in memory may travel inside a command; its content is
	// read without consuming r, which the other ways then read whole.
	var small []byte
	if b, ok := r.(*bytes.Reader); ok && b.Len() <= inlineMax {
		small = make([]byte, b.Len())
		_, _ = b.ReadAt(small, b.Size()-int64(b.Len()))
	}
	if sw, ok := transportAs[smallFileWriter](t); ok && small != nil {
		start := time.Now()
		err := inlineWriteError(path, sw.WriteSmallFile(ctx, path, small, mode))
		if !errors.Is(err, errNotRun) {
			return logWrite(ctx, t, path, "idle shell", start, err)
		}
	}
	if fw, ok := transportAs[FileWriter](t); ok {
		start := time.Now()
		err := fw.WriteFileAtomic(ctx, path, r, mode)
		if !errors.Is(err, ErrNoFileWriter) {
			return logWrite(ctx, t, path, "sftp", start, err)
		}
		// Nothing was read from r: the pipeline gets all of it.
	}
	if small != nil {
		start := time.Now()
		err := inlineWriteError(path, runPrivately(ctx, t, inlineWrite(path, small, mode), nil))
		if !errors.Is(err, errNotRun) {
			return logWrite(ctx, t, path, "shell", start, err)
		}
	}
	return uploadShell(ctx, t, path, r, mode)
}

// privateRunner is a Transport that can run a script without input where
// no other user of the host can read it: on no process's command line
// (/proc/PID/cmdline is readable by every user). A script that holds a
// file's content (printData) runs only that way. errNotRun (wrapped) when
// it cannot run this one so.
type privateRunner interface {
	RunPrivately(ctx context.Context, script string, stdout io.Writer) error
}

var (
	_ privateRunner = (*SSH)(nil)
	_ privateRunner = (*Local)(nil)
)

// resettable is a command's output that a retry elsewhere starts again.
type resettable interface {
	io.Writer
	Reset()
}

// runScriptPrivately runs script where no other user of the host reads
// it: in a shell of the connection, or, when none takes it (a script too
// long for a shell), on a session's input.
func runScriptPrivately(ctx context.Context, t Transport, script string, out resettable) error {
	err := runPrivately(ctx, t, script, out)
	if errors.Is(err, errNotRun) {
		out.Reset()
		err = transportRun(ctx, t, script, out)
	}
	return err
}

// runPrivately runs script through t's privateRunner; errNotRun (wrapped)
// when t has none or it declines.
func runPrivately(ctx context.Context, t Transport, script string, stdout io.Writer) error {
	if p, ok := transportAs[privateRunner](t); ok {
		return p.RunPrivately(ctx, script, stdout)
	}
	return fmt.Errorf("%s runs no command privately: %w", t.Host(), errNotRun)
}

// logWrite logs a file write done by way (at DEBUG, as host commands are)
// and returns its err.
func logWrite(ctx context.Context, t Transport, path, way string, start time.Time, err error) error {
	fields := map[string]any{"host": t.Host(), "path": path, "duration_ms": time.Since(start).Milliseconds()}
	if err != nil {
		fields["error"] = err.Error()
	}
	tflog.Debug(ctx, "host file write ("+way+")", fields)
	return err
}

// inlineWriteError is err of a command that held a file's content
// (inlineWrite), without the command: a CommandError quotes its script,
// which would put the start of an env file's values in a diagnostic.
func inlineWriteError(path string, err error) error {
	return withoutContent("writing "+path, err)
}

// withoutContent is err with the script of its CommandError, if any,
// replaced by what the command did.
func withoutContent(what string, err error) error {
	var ce *CommandError
	if !errors.As(err, &ce) {
		return err
	}
	return &CommandError{Host: ce.Host, Script: "(" + what + ": its content is not shown)", ExitCode: ce.ExitCode, Stderr: ce.Stderr}
}

// inlineMax bounds the files written by a command that holds their
// content (inlineWrite): a command without input runs in one of the
// connection's shells, where a command with input (uploadShell) costs a
// session and a login shell. sh reads a shell's request a byte at a time
// (about 2 ms per KiB), so this pays on a host without sftp only for the
// small files most writes are (records, env files, a small repo's tar).
const inlineMax = 8 << 10

// inlineWrite is uploadShell's script with the content in it (printData).
func inlineWrite(path string, data []byte, mode os.FileMode) string {
	return writeScript(path, printData(data), mode)
}

// printData is a command that prints data exactly, held as a printf
// format: printf takes any byte in its format but %, \ and NUL (which no
// shell word can hold), written %%, \\ and \0 (\000 before an octal
// digit). printf is a builtin of the sh of every host the provider runs
// on (dash, bash, busybox ash), so no process's command line holds data;
// an sh whose printf is a program (OpenBSD's ksh) would show it.
func printData(data []byte) string {
	var format strings.Builder
	for i, c := range data {
		switch c {
		case '-':
			if i == 0 { // printf would take a format starting with - for an option
				format.WriteString(`\055`)
			} else {
				format.WriteByte(c)
			}
		case '%':
			format.WriteString("%%")
		case '\\':
			format.WriteString(`\\`)
		case 0:
			// \0 alone where no octal digit follows that the escape could
			// take for its own: a tar is mostly NULs.
			if i+1 < len(data) && data[i+1] >= '0' && data[i+1] <= '7' {
				format.WriteString(`\000`)
			} else {
				format.WriteString(`\0`)
			}
		default:
			format.WriteByte(c)
		}
	}
	return "printf " + Quote(format.String())
}

// smallFileWriter is a Transport that may write a small file (at most
// inlineMax bytes) more cheaply than as a FileWriter (SSH.WriteSmallFile);
// errNotRun (wrapped) when it declines, having written nothing.
type smallFileWriter interface {
	WriteSmallFile(ctx context.Context, path string, data []byte, mode os.FileMode) error
}

var _ smallFileWriter = (*SSH)(nil)

// transportAs finds the T (FileWriter, smallFileWriter) behind t. A *Host
// embeds its transport, which does not make the host itself one, so look
// through it.
func transportAs[T any](t Transport) (T, bool) {
	for {
		h, ok := t.(*Host)
		if !ok || h.Transport == nil {
			break
		}
		t = h.Transport
	}
	v, ok := t.(T)
	return v, ok
}

// uploadShell is Upload as one shell pipeline: `cat` into a temporary file
// beside path (created 0600 under umask 077, so its content is never
// readable by others), chmod, then `mv` over path.
func uploadShell(ctx context.Context, t Transport, path string, r io.Reader, mode os.FileMode) error {
	return t.Run(ctx, writeScript(path, "cat", mode), r, nil)
}

// writeScript replaces path with what fill prints, as uploadShell says.
// It is a subshell (its umask and trap are its own) whose steps are
// chained with &&, not under set -e, which a shell ignores in a command
// on the left of || (as a caller's `writeScript || exit $?` is).
func writeScript(path, fill string, mode os.FileMode) string {
	return fmt.Sprintf(`(umask 077 && mkdir -p -- "$(dirname -- %[1]s)" && t=%[2]s.$$ && trap 'rm -f -- "$t"' EXIT && %[4]s > "$t" && chmod %[3]o "$t" && mv -f -- "$t" %[1]s && trap - EXIT)`,
		Quote(path), Quote(path+".tmp"), mode.Perm(), fill)
}

// MakeDir's outcomes other than success (hosts.Ask's framing: exit
// statuses mean failure only).
const (
	dirExists    = "exists"
	guardMissing = "guard-missing"
)

// MakeDir creates dir on the host, whose parent must exist, and copies the
// local directory src (when not "") into it, in one command. A dir that
// exists already is fs.ErrExist, and nothing is written into it. With a
// guard file, dir is made only while that file exists (fs.ErrNotExist).
func MakeDir(ctx context.Context, t Transport, dir, src, guard string) error {
	m := NewMark()
	script := makeDirScript(m, dir, guard)
	var out bytes.Buffer
	err := errNotRun
	tarball, small := smallTar(src, t)
	if filled, ok := makeDirInline(m, dir, guard, src, tarball, small); ok && src != "" {
		// Held by the command that makes dir (printData): one round trip
		// in a shell instead of three, and no file on the host.
		what := "making " + dir + " with a copy of " + src
		start := time.Now()
		err = withoutContent(what, runPrivately(ctx, t, filled, &out))
		if !errors.Is(err, errNotRun) {
			logCommand(ctx, t.Host(), "("+what+")", start, err) // without its content
		}
	}
	if errors.Is(err, errNotRun) {
		out.Reset()
		switch {
		case src == "":
			err = t.Run(ctx, script, nil, &out)
		case small:
			if err = t.Run(ctx, script, nil, &out); err == nil && !bytes.Contains(out.Bytes(), []byte(m)) {
				err = unpackInto(ctx, t, dir, tarball)
			}
		default:
			err = copyDir(ctx, t, src, script+" && tar -x -f - --no-same-owner -C "+Quote(dir), &out)
		}
	}
	// A framed outcome wins over the error: the script ended before it
	// read its input (a large copy's tar), which the session reports as
	// the input's copy failing.
	if reply, perr := ParseReply(m, out.Bytes()); perr == nil {
		if oerr := MakeDirOutcome(dir, guard, reply.Result); oerr != nil {
			return oerr
		}
	}
	return err
}

// makeDirScript makes dir, answering m's results dirExists or guardMissing.
func makeDirScript(m Mark, dir, guard string) string {
	script := fmt.Sprintf("if [ -e %[1]s ] || [ -L %[1]s ]; then %[2]s; fi; mkdir -- %[1]s", Quote(dir), m.Result(dirExists))
	if guard != "" {
		script = fmt.Sprintf("[ -f %s ] || %s; ", Quote(guard), m.Result(guardMissing)) + script
	}
	return script
}

// MakeDirInline is MakeDir's work as a script for a command of the
// caller's, built around its mark (answering with m's results, read by
// MakeDirOutcome), the copy of src held in it (printData): ok is false
// when src is too large to travel so (more than inlineMax bytes of tar)
// or unreadable, and MakeDir must do it. The script holds content: run it
// where no one else reads it (AskPrivately).
func MakeDirInline(t Transport, dir, src, guard string) (script func(m Mark) string, ok bool) {
	tarball, small := smallTar(src, t)
	if _, ok := makeDirInline("", dir, guard, src, tarball, small); !ok {
		return nil, false
	}
	return func(m Mark) string {
		s, _ := makeDirInline(m, dir, guard, src, tarball, small)
		return s
	}, true
}

// makeDirInline is MakeDirInline with src's tar made (smallTar).
func makeDirInline(m Mark, dir, guard, src string, tarball []byte, small bool) (string, bool) {
	script := makeDirScript(m, dir, guard)
	if src == "" {
		return script, true
	}
	if !small || len(tarball) > inlineMax {
		return "", false
	}
	// (A tar is mostly runs of NULs, two bytes each in printData: the
	// command fits a shell's request.) tar -C, not cd: what follows in the
	// caller's command may name paths relative to the login directory.
	return script + " && " + printData(tarball) + " | tar -x -f - --no-same-owner -C " + Quote(dir), true
}

// MakeDirOutcome is MakeDir's error for a result its script answered
// (fs.ErrExist, fs.ErrNotExist), nil for any other.
func MakeDirOutcome(dir, guard, result string) error {
	switch result {
	case dirExists:
		return fmt.Errorf("%s: %w", dir, fs.ErrExist)
	case guardMissing:
		return fmt.Errorf("%s: not made, %s is gone: %w", dir, guard, fs.ErrNotExist)
	}
	return nil
}

// WriteScript is a script replacing path with data, held in it
// (printData), as WriteFile does, for a command of the caller's: run it
// where no one else reads it (AskPrivately).
func WriteScript(path string, data []byte, mode os.FileMode) string {
	return inlineWrite(path, data, mode)
}

// transportRun runs script on t's transport itself: a Host's Run would log
// the script.
func transportRun(ctx context.Context, t Transport, script string, stdout io.Writer) error {
	for {
		h, ok := t.(*Host)
		if !ok || h.Transport == nil {
			break
		}
		t = h.Transport
	}
	return t.Run(ctx, script, nil, stdout)
}

// AskPrivately is Ask for a script that holds content (WriteScript,
// MakeDirInline): it runs where no other user of the host reads it (a
// shell of the connection, or a session's input), and neither the log
// nor an error quotes it: both name it by what. Unlike Ask, a failed
// command's reply holds what it answered before it failed.
func AskPrivately(ctx context.Context, t Transport, what string, script func(m Mark) string) (Reply, error) {
	m := NewMark()
	return askPrivately(ctx, t, what, m, script(m))
}

// askPrivately is AskPrivately of the script s, built around m.
func askPrivately(ctx context.Context, t Transport, what string, m Mark, s string) (Reply, error) {
	var out bytes.Buffer
	start := time.Now()
	err := runScriptPrivately(ctx, t, s, &out)
	logCommand(ctx, t.Host(), "("+what+")", start, err)
	// What it answered before it failed tells where it did.
	reply, perr := ParseReply(m, out.Bytes())
	if err != nil {
		return reply, withoutContent(what, err)
	}
	return reply, perr
}

// smallTarMax bounds the tar of a local directory that MakeDir sends as a
// file rather than as a stream: a repo of compose files and a few sources
// is far below it; a larger tree streams (its copy dwarfs a session's cost).
const smallTarMax = 4 << 20

// smallTar returns the tar of the local directory src when it can go as a
// file: at most smallTarMax bytes when t writes files itself (SSH, through
// sftp; a host without sftp takes it as a file too, through inlineWrite,
// while it is at most inlineMax bytes). Sent that way, MakeDir needs no
// command with input: its commands run in the connection's shells
// (shell.go) instead of a session and a login shell each, which is most of
// a small create's cost on a busy host.
func smallTar(src string, t Transport) ([]byte, bool) {
	if src == "" {
		return nil, false
	}
	if st, err := os.Stat(src); err != nil || !st.IsDir() {
		return nil, false // copyDir reports it
	}
	max := inlineMax
	if _, ok := transportAs[FileWriter](t); ok {
		max = smallTarMax
	}
	buf := &cappedBuffer{max: max}
	if err := localdir.WriteTar(buf, src); err != nil {
		return nil, false // too large, or unreadable: streamed (copyDir reports errors)
	}
	return buf.Bytes(), true
}

// cappedBuffer is a bytes.Buffer that refuses to grow past max.
type cappedBuffer struct {
	bytes.Buffer
	max int
}

var errTooLarge = errors.New("larger than the buffer allows")

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		return 0, errTooLarge
	}
	return b.Buffer.Write(p)
}

// unpackInto writes tarball into the existing directory dir as a private
// file (0600, under a random name) and unpacks it there in one command
// that removes the file whatever the outcome. Should the provider die in
// between, the file is left inside dir, which is the new workspace, and
// goes with it.
func unpackInto(ctx context.Context, t Transport, dir string, tarball []byte) error {
	name := ".sandboxer-copy-" + randomSuffix() + ".tar"
	if err := Upload(ctx, t, dir+"/"+name, bytes.NewReader(tarball), 0o600); err != nil {
		return err
	}
	return t.Run(ctx, fmt.Sprintf("cd -- %s && { tar -x -f %s --no-same-owner; r=$?; rm -f -- %s; exit $r; }",
		Quote(dir), name, name), nil, nil)
}

// copyDir runs script with a tar stream of the local directory src as its
// standard input.
func copyDir(ctx context.Context, t Transport, src, script string, stdout io.Writer) error {
	if st, err := os.Stat(src); err != nil || !st.IsDir() {
		return fmt.Errorf("local directory %s is not readable: %v", src, err)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(localdir.WriteTar(pw, src)) }()
	err := t.Run(ctx, script, pr, stdout)
	_ = pr.CloseWithError(io.ErrClosedPipe) // unblock the writer if the command ended early
	return err
}
