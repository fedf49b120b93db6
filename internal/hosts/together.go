package hosts

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Commands asked together. An apply that stops ten sandboxes of one host
// asks it for ten `compose stop`s at once. Each in a command of its own
// needs a shell of its own: the connection starts shells a few at a time,
// each through the user's login shell, and holds at most its session cap,
// so the last stops wait for the first ones. AskTogether runs such
// commands, alike and independent, in one: each in a background subshell
// of it, side by side on the host, their answers framed apart. A command
// asked while others of its group are gathering joins them; the first
// gathers for as long as more keep coming (togetherQuiet after the last,
// togetherMax in all), so a command asked alone waits togetherQuiet.
// Each command's answer is printed as soon as it ends, and its caller
// answered then: a quick command of a batch never waits for a slow one.

const (
	togetherQuiet = 20 * time.Millisecond
	togetherMax   = 200 * time.Millisecond
)

// The batch's sections: each command's output, then its standard error's
// tail, then the end of its answer. The part's argument is "INDEX STATUS",
// the end's "INDEX".
const (
	togetherPart = "part"
	togetherErr  = "err"
	togetherEnd  = "end"
)

type togetherKey struct {
	t     Transport
	group string
}

type togetherCall struct {
	ctx    context.Context
	what   string
	m      Mark
	script string
	reply  Reply
	err    error
	done   chan struct{}
}

type togetherBatch struct {
	calls  []*togetherCall
	joined chan struct{} // one token per join not yet seen by the gatherer
}

var together = struct {
	sync.Mutex
	forming map[togetherKey]*togetherBatch
}{forming: map[togetherKey]*togetherBatch{}}

// AskTogether is AskPrivately for a command of a group (a word naming what
// its commands do) that may run beside others of the group in one command
// on t. scratch is a directory of the host the provider owns: the
// commands' answers wait there, in a directory removed once they are read.
// The commands run in subshells of one shell, so $$ is the same in all of
// them: a temporary file is named after what it is for, not after $$
// alone. A caller that gives up returns at once; its command goes on with
// the others, and the batch is killed only when all of them gave up.
func AskTogether(ctx context.Context, t Transport, group, scratch, what string, script func(m Mark) string) (Reply, error) {
	c := &togetherCall{ctx: ctx, what: what, m: NewMark(), done: make(chan struct{})}
	c.script = script(c.m)
	key := togetherKey{t, group}
	together.Lock()
	b, joining := together.forming[key]
	if !joining {
		b = &togetherBatch{joined: make(chan struct{}, 1)}
		together.forming[key] = b
	}
	b.calls = append(b.calls, c)
	together.Unlock()
	if joining {
		select {
		case b.joined <- struct{}{}:
		default: // the gatherer has a token to see already
		}
	} else {
		gather(ctx, b)
		together.Lock()
		delete(together.forming, key)
		calls := b.calls
		together.Unlock()
		go runTogether(t, scratch, calls)
	}
	select {
	case <-c.done:
		return c.reply, c.err
	case <-ctx.Done():
		return Reply{}, ctx.Err()
	}
}

// gather waits until no command joined b for togetherQuiet, at most
// togetherMax in all.
func gather(ctx context.Context, b *togetherBatch) {
	limit := time.NewTimer(togetherMax)
	defer limit.Stop()
	for {
		quiet := time.NewTimer(togetherQuiet)
		select {
		case <-b.joined:
			quiet.Stop()
			continue
		case <-quiet.C:
		case <-limit.C:
			quiet.Stop()
		case <-ctx.Done():
			quiet.Stop()
		}
		return
	}
}

// runTogether runs calls and answers each, as its answer arrives.
func runTogether(t Transport, scratch string, calls []*togetherCall) {
	if len(calls) == 1 {
		c := calls[0]
		c.reply, c.err = askPrivately(c.ctx, t, c.what, c.m, c.script)
		close(c.done)
		return
	}
	ctx, cancel := untilAllGaveUp(calls)
	defer cancel()
	start := time.Now()
	w := &partsWriter{outer: NewMark(), answered: make([]bool, len(calls))}
	finish := func(i int, reply Reply, err error) {
		c := calls[i]
		c.reply, c.err = reply, err
		w.answered[i] = true
		w.nAnswered++
		logCommand(c.ctx, t.Host(), fmt.Sprintf("(%s, one of %d together)", c.what, len(calls)), start, c.err)
		close(c.done)
	}
	w.each = func(i int, p partAnswer) {
		if i >= 0 && i < len(calls) && !w.answered[i] {
			reply, err := p.answer(t.Host(), calls[i])
			finish(i, reply, err)
		}
	}
	err := runScriptPrivately(ctx, t, togetherScript(w.outer, scratch, calls), w)
	w.mu.Lock() // the transport's writes are over; a late one is ignored
	defer w.mu.Unlock()
	w.closed = true
	err = cmp.Or(err, w.err)
	if err == nil && w.nAnswered < len(calls) {
		err = fmt.Errorf("the host answered %d of %d commands run together", w.nAnswered, len(calls))
	}
	for i, c := range calls {
		if !w.answered[i] {
			finish(i, Reply{}, withoutContent(c.what, err))
		}
	}
}

// partsWriter reads a batch's answer as it comes: each command's part
// (togetherScript) is handed to each once its end has arrived.
type partsWriter struct {
	outer     Mark
	each      func(i int, p partAnswer)
	mu        sync.Mutex
	buf       []byte
	answered  []bool
	nAnswered int
	err       error // the first part that could not be read
	closed    bool
}

func (w *partsWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	end := []byte(string(w.outer) + " " + frameSection + " " + togetherEnd + " ")
	for {
		i := bytes.Index(w.buf, end)
		if i < 0 {
			return len(p), nil
		}
		nl := bytes.IndexByte(w.buf[i:], '\n')
		if nl < 0 {
			return len(p), nil
		}
		chunk := w.buf[:i+nl+1]
		w.buf = w.buf[i+nl+1:]
		idx, part, err := parsePart(w.outer, chunk)
		if err != nil {
			w.err = cmp.Or(w.err, err)
			continue
		}
		w.each(idx, part)
	}
}

// Reset forgets what was written: the batch runs again elsewhere, the
// first try having run nothing (errNotRun).
func (w *partsWriter) Reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = nil
}

// untilAllGaveUp is a context, with the values of the first call's, that
// ends once every call's has.
func untilAllGaveUp(calls []*togetherCall) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(calls[0].ctx))
	go func() {
		for _, c := range calls {
			select {
			case <-c.ctx.Done():
			case <-ctx.Done():
				return
			}
		}
		cancel()
	}()
	return ctx, cancel
}

// togetherScript runs each call's script in a background subshell whose
// output, error and status go to files of a directory of its own under
// scratch; as each ends, it says so on a fifo, and its answer is printed
// then, framed by outer. Directories that a killed batch left (its files
// are small) are removed after an hour.
func togetherScript(outer Mark, scratch string, calls []*togetherCall) string {
	var b strings.Builder
	fmt.Fprintf(&b, "_sbx_d=%s; mkdir -p -- \"$_sbx_d\" || exit 1\n", Quote(scratch))
	b.WriteString("find \"$_sbx_d\" -mindepth 1 -maxdepth 1 -mmin +60 -exec rm -rf -- {} + 2>/dev/null\n")
	b.WriteString("_sbx_t=$(umask 077 && mktemp -d \"$_sbx_d/together.XXXXXX\") || exit 1\n")
	// Read and written through this shell's fd 7: opening it blocks neither.
	b.WriteString("mkfifo -- \"$_sbx_t/ended\" && exec 7<>\"$_sbx_t/ended\" || exit 1\n")
	for i, c := range calls {
		fmt.Fprintf(&b, "( (\n%s\n) >\"$_sbx_t/%[2]d\" 2>\"$_sbx_t/%[2]d.err\" </dev/null 7>&-; echo $? >\"$_sbx_t/%[2]d.rc\"; echo %[2]d >&7 ) &\n", c.script, i)
	}
	// The directory goes before the last part's end: its caller, the last
	// answered, finds nothing left.
	fmt.Fprintf(&b, "_sbx_n=0\nwhile [ \"$_sbx_n\" -lt %[1]d ] && IFS= read -r _sbx_i <&7; do\n_sbx_n=$((_sbx_n + 1))\n", len(calls))
	fmt.Fprintf(&b, "%s; cat -- \"$_sbx_t/$_sbx_i\"; %s; tail -c %d -- \"$_sbx_t/$_sbx_i.err\"\n",
		outer.Section(togetherPart, `"$_sbx_i $(cat -- "$_sbx_t/$_sbx_i.rc")"`), outer.Section(togetherErr, ""), stderrTailBytes)
	fmt.Fprintf(&b, "if [ \"$_sbx_n\" -eq %d ]; then exec 7>&-; rm -rf -- \"$_sbx_t\"; fi\n%s\ndone\nwait\n", len(calls), outer.Section(togetherEnd, `"$_sbx_i"`))
	return b.String()
}

// A partAnswer is what one call's command left.
type partAnswer struct {
	status int
	out    []byte
	stderr string
}

// parsePart reads one command's part of togetherScript's answer, up to
// its end: its index, status, output and error.
func parsePart(outer Mark, chunk []byte) (int, partAnswer, error) {
	reply, err := ParseReply(outer, chunk)
	if err != nil {
		return 0, partAnswer{}, err
	}
	var p partAnswer
	idx, parts := -1, 0
	for _, s := range reply.Sections {
		switch s.Kind {
		case togetherPart:
			i, status, ok := strings.Cut(s.Arg, " ")
			n, err1 := strconv.Atoi(i)
			rc, err2 := strconv.Atoi(strings.TrimSpace(status))
			if !ok || err1 != nil || err2 != nil {
				return 0, partAnswer{}, fmt.Errorf("unexpected part %q in the host's answer", s.Arg)
			}
			idx, p.status, p.out = n, rc, s.Body
			parts++
		case togetherErr:
			p.stderr = string(s.Body)
		case togetherEnd:
			if n, err := strconv.Atoi(s.Arg); err != nil || n != idx || parts != 1 {
				return 0, partAnswer{}, fmt.Errorf("unexpected end %q of part %d in the host's answer", s.Arg, idx)
			}
		default:
			return 0, partAnswer{}, fmt.Errorf("unexpected section %q in the host's answer", s.Kind)
		}
	}
	return idx, p, nil
}

// answer is c's reply and error, as AskPrivately would have returned them.
func (p partAnswer) answer(host string, c *togetherCall) (Reply, error) {
	reply, perr := ParseReply(c.m, p.out)
	if p.status != 0 {
		return reply, &CommandError{Host: host, Script: "(" + c.what + ": its content is not shown)", ExitCode: p.status, Stderr: p.stderr}
	}
	return reply, perr
}
