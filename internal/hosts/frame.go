package hosts

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
)

// The framing of everything a host answers in-band. A command's output is
// data the provider does not control (a record file, a compose project's
// names, a login shell's chatter), so no fixed string can delimit it: the
// provider draws a mark of 128 random bits for each command, and a line
// that starts with it is the provider's own:
//
//	MARK KIND [ARG]\n
//
// KIND is one word. The shells (shell.go) use the kinds ack and end for
// their loop; scripts use section, to split their output into parts, and
// result, to answer a named outcome ("no such record") instead of a magic
// exit status that any command in the script could also return. A line
// that does not start with the mark is data.
const (
	frameSection = "section"
	frameResult  = "result"
)

// A Mark delimits one command's answer (see the framing above).
type Mark string

// NewMark draws a mark.
func NewMark() Mark {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return Mark(hex.EncodeToString(b))
}

// frameLine is the shell code printing the frame line "m kind arg" on
// standard output; arg is a shell word (quoted, or an expansion in double
// quotes) and may be empty.
func (m Mark) frameLine(kind, arg string) string {
	if arg == "" {
		return fmt.Sprintf("printf '%%s\\n' '%s %s'", m, kind)
	}
	return fmt.Sprintf("printf '%s %s %%s\\n' %s", m, kind, arg)
}

// Section is the shell code starting a section of the answer: what the
// script prints after it, up to the next frame line, is the section's
// body. kind is a word; arg a shell word naming the section (Quote it, or
// pass an expansion in double quotes), or empty.
func (m Mark) Section(kind, arg string) string {
	return m.frameLine(frameSection+" "+kind, arg)
}

// Result is the shell code ending the script with a named outcome: the
// script exits 0 and Reply.Result is name. name is a word the caller
// defines as a constant beside the script.
func (m Mark) Result(name string) string {
	return fmt.Sprintf("{ %s; exit 0; }", m.frameLine(frameResult, Quote(name)))
}

// ResultLine is Result's frame line, for a program answering it (then exiting 0).
func (m Mark) ResultLine(name string) string {
	return fmt.Sprintf("%s %s %s\n", m, frameResult, name)
}

// A Reply is a framed answer: the sections in order, and the named result
// if the script ended with one.
type Reply struct {
	Head     []byte // printed before the first section
	Sections []Section
	Result   string
}

// A Section is one part of a framed answer.
type Section struct {
	Kind string
	Arg  string
	Body []byte
}

// ParseReply splits out, a command's standard output, by m's frame lines.
// A frame line need not start a line: what a command printed without a
// final newline is data up to the mark, as in the shells. A frame of a
// kind it does not know is an error: the script and this parser disagree.
func ParseReply(m Mark, out []byte) (Reply, error) {
	var r Reply
	body := &r.Head
	prefix := []byte(string(m) + " ")
	for {
		i := bytes.Index(out, prefix)
		if i < 0 {
			*body = append(*body, out...)
			return r, nil
		}
		*body = append(*body, out[:i]...)
		line, rest, _ := bytes.Cut(out[i+len(prefix):], []byte("\n"))
		out = rest
		kind, arg, _ := strings.Cut(string(line), " ")
		switch kind {
		case frameSection:
			k, a, _ := strings.Cut(arg, " ")
			r.Sections = append(r.Sections, Section{Kind: k, Arg: a})
			body = &r.Sections[len(r.Sections)-1].Body
		case frameResult:
			r.Result = arg
			return r, nil // the script exited: nothing follows
		default:
			return Reply{}, fmt.Errorf("unexpected frame %q in the host's answer", kind)
		}
	}
}

// Ask runs the script that script builds around a fresh mark and parses
// its framed answer. A non-zero exit is a *CommandError, as for Output.
func Ask(ctx context.Context, t Transport, script func(m Mark) string) (Reply, error) {
	m := NewMark()
	out, err := Output(ctx, t, script(m))
	if err != nil {
		return Reply{}, err
	}
	return ParseReply(m, out)
}
