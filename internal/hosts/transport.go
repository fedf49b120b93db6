// Package hosts is the transport layer: it runs shell commands on a host,
// either this machine or one reached over SSH, behind one small interface.
// Nothing above this package knows whether a host is local or remote.
package hosts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// Transport runs POSIX sh scripts on one host.
type Transport interface {
	// Host is the host's name as configured in the provider, for diagnostics.
	Host() string
	// Run runs script with `sh -c` on the host. stdin may be nil; stdout
	// receives the script's standard output (nil discards it). A script that
	// exits non-zero returns a *CommandError carrying the tail of its stderr.
	Run(ctx context.Context, script string, stdin io.Reader, stdout io.Writer) error
}

// Output runs script and returns its standard output.
func Output(ctx context.Context, t Transport, script string) ([]byte, error) {
	var out bytes.Buffer
	err := t.Run(ctx, script, nil, &out)
	return out.Bytes(), err
}

// stderrTailBytes bounds how much of a failed command's stderr is kept for
// the diagnostic: enough to show the cause, small enough to read.
const stderrTailBytes = 2048

// CommandError is a remote (or local) command that exited non-zero.
type CommandError struct {
	Host     string
	Script   string
	ExitCode int
	Stderr   string // tail of standard error
}

func (e *CommandError) Error() string {
	script := Shown(e.Script)
	if len(script) > 200 {
		script = script[:200] + "…"
	}
	msg := fmt.Sprintf("on host %q: command exited with status %d: %s", e.Host, e.ExitCode, script)
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += "\nstderr (tail):\n" + s
	}
	return msg
}

// quotedWord is a single-quoted shell word as Quote writes it, an
// embedded quote ('\”) included.
var quotedWord = regexp.MustCompile(`'[^']*'(?:"'"'[^']*')*`)

// shownQuotedMax bounds the quoted words Shown keeps: paths and names are
// shorter; content (a rendered compose file, an agent's request, a file
// printed by a command) is longer.
const shownQuotedMax = 96

// Shown is script as logs and diagnostics show it: each quoted word
// longer than shownQuotedMax, which is content, not a path or a name,
// replaced by its length. A script may hold a file's content; the start
// of a command is what tells commands apart.
func Shown(script string) string {
	return quotedWord.ReplaceAllStringFunc(script, func(w string) string {
		if len(w) <= shownQuotedMax {
			return w
		}
		return fmt.Sprintf("'<%d bytes not shown>'", len(w))
	})
}

// IsExitCode reports whether err is a CommandError with the given exit code.
func IsExitCode(err error, code int) bool {
	var ce *CommandError
	return errors.As(err, &ce) && ce.ExitCode == code
}

// tailBuffer keeps the last n bytes written to it.
type tailBuffer struct {
	n   int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.n {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.n:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string { return string(b.buf) }
