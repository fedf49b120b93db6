package hosts

import (
	"bytes"
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

const (
	togetherQuiet = 20 * time.Millisecond
	togetherMax   = 200 * time.Millisecond
)

// The batch's sections: each command's output, then its standard error's
// tail. The part's argument is "INDEX STATUS".
const (
	togetherPart = "part"
	togetherErr  = "err"
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

// runTogether runs calls and answers each.
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
	outer := NewMark()
	var out bytes.Buffer
	err := runScriptPrivately(ctx, t, togetherScript(outer, scratch, calls), &out)
	var parts map[int]partAnswer
	if err == nil {
		parts, err = splitTogether(outer, out.Bytes(), len(calls))
	}
	for i, c := range calls {
		if err != nil {
			c.err = withoutContent(c.what, err)
		} else {
			c.reply, c.err = parts[i].answer(t.Host(), c)
		}
		logCommand(c.ctx, t.Host(), fmt.Sprintf("(%s, one of %d together)", c.what, len(calls)), start, c.err)
		close(c.done)
	}
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
// scratch, then prints them framed by outer. Directories that a killed
// batch left (its files are small) are removed after an hour.
func togetherScript(outer Mark, scratch string, calls []*togetherCall) string {
	var b strings.Builder
	fmt.Fprintf(&b, "_sbx_d=%s; mkdir -p -- \"$_sbx_d\" || exit 1\n", Quote(scratch))
	b.WriteString("find \"$_sbx_d\" -mindepth 1 -maxdepth 1 -mmin +60 -exec rm -rf -- {} + 2>/dev/null\n")
	b.WriteString("_sbx_t=$(umask 077 && mktemp -d \"$_sbx_d/together.XXXXXX\") || exit 1\n")
	for i, c := range calls {
		fmt.Fprintf(&b, "( (\n%s\n) >\"$_sbx_t/%[2]d\" 2>\"$_sbx_t/%[2]d.err\" </dev/null; echo $? >\"$_sbx_t/%[2]d.rc\" ) &\n", c.script, i)
	}
	b.WriteString("wait\n")
	for i := range calls {
		fmt.Fprintf(&b, "%s; cat -- \"$_sbx_t/%[2]d\"; %[3]s; tail -c %[4]d -- \"$_sbx_t/%[2]d.err\"\n",
			outer.Section(togetherPart, fmt.Sprintf(`"%d $(cat -- "$_sbx_t/%d.rc")"`, i, i)), i, outer.Section(togetherErr, ""), stderrTailBytes)
	}
	b.WriteString("rm -rf -- \"$_sbx_t\"\n")
	return b.String()
}

// A partAnswer is what one call's command left.
type partAnswer struct {
	status int
	out    []byte
	stderr string
}

// splitTogether reads togetherScript's answer: n parts, each with its error.
func splitTogether(outer Mark, out []byte, n int) (map[int]partAnswer, error) {
	reply, err := ParseReply(outer, out)
	if err != nil {
		return nil, err
	}
	parts := map[int]partAnswer{}
	last := -1
	for _, s := range reply.Sections {
		switch s.Kind {
		case togetherPart:
			i, status, ok := strings.Cut(s.Arg, " ")
			idx, err1 := strconv.Atoi(i)
			rc, err2 := strconv.Atoi(strings.TrimSpace(status))
			if !ok || err1 != nil || err2 != nil || idx < 0 || idx >= n {
				return nil, fmt.Errorf("unexpected part %q in the host's answer", s.Arg)
			}
			parts[idx] = partAnswer{status: rc, out: s.Body}
			last = idx
		case togetherErr:
			if last < 0 {
				return nil, fmt.Errorf("an error before any part in the host's answer")
			}
			p := parts[last]
			p.stderr = string(s.Body)
			parts[last] = p
		default:
			return nil, fmt.Errorf("unexpected section %q in the host's answer", s.Kind)
		}
	}
	if len(parts) != n {
		return nil, fmt.Errorf("the host answered %d of %d commands run together", len(parts), n)
	}
	return parts, nil
}

// answer is c's reply and error, as AskPrivately would have returned them.
func (p partAnswer) answer(host string, c *togetherCall) (Reply, error) {
	reply, perr := ParseReply(c.m, p.out)
	if p.status != 0 {
		return reply, &CommandError{Host: host, Script: "(" + c.what + ": its content is not shown)", ExitCode: p.status, Stderr: p.stderr}
	}
	return reply, perr
}
