package hosts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Commands asked together run in one command of the host, side by side,
// and each gets its own answer: its sections, its exit status and its
// standard error, as if asked alone.
func TestAskTogether(t *testing.T) {
	tr := startInProcessServer(t, nil).transport(t, 4)
	scratch := t.TempDir() + "/run"

	const n = 6
	type answer struct {
		reply Reply
		err   error
	}
	answers := make([]answer, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i].reply, answers[i].err = AskTogether(context.Background(), tr, "test", scratch, fmt.Sprintf("command %d", i), func(m Mark) string {
				// Each sleeps 1 s: run one after another they would take n s.
				script := fmt.Sprintf("sleep 1; %s; echo $$; %s; printf 'out %d'", m.Section("pid", ""), m.Section("body", ""), i)
				switch i {
				case 2:
					script += "; echo 'it failed' >&2; exit 3"
				case 4:
					script += "; " + m.Result("named")
				}
				return script
			})
		}()
	}
	wg.Wait()
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("%d commands of 1 s asked together took %v: they did not run side by side", n, took)
	}
	pids := map[string]bool{}
	for i, a := range answers {
		if i == 2 {
			var ce *CommandError
			if !errors.As(a.err, &ce) || ce.ExitCode != 3 || !strings.Contains(ce.Stderr, "it failed") {
				t.Fatalf("command 2: want its exit status 3 and its stderr, got %v", a.err)
			}
			if strings.Contains(ce.Error(), "sleep") {
				t.Fatalf("command 2's error quotes its script: %v", ce)
			}
			continue
		}
		if a.err != nil {
			t.Fatalf("command %d: %v", i, a.err)
		}
		var body string
		for _, s := range a.reply.Sections {
			switch s.Kind {
			case "pid":
				pids[strings.TrimSpace(string(s.Body))] = true
			case "body":
				body = string(s.Body)
			}
		}
		if body != fmt.Sprintf("out %d", i) {
			t.Fatalf("command %d answered %q in its body section", i, body)
		}
		if want := map[bool]string{true: "named", false: ""}[i == 4]; a.reply.Result != want {
			t.Fatalf("command %d: result %q, want %q", i, a.reply.Result, want)
		}
	}
	if len(pids) != 1 {
		t.Fatalf("the commands ran in %d shells, want one: %v", len(pids), pids)
	}
	left, err := os.ReadDir(scratch)
	if err != nil || len(left) != 0 {
		t.Fatalf("the scratch directory keeps %d entries (%v) after the answers were read", len(left), err)
	}
}

// A caller that gives up returns at once; the others get their answers.
func TestAskTogetherOneGivesUp(t *testing.T) {
	tr := startInProcessServer(t, nil).transport(t, 4)
	dir := t.TempDir()
	started := dir + "/started"
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var gaveUp, other error
	var otherReply Reply
	var returned time.Time
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, gaveUp = AskTogether(ctx, tr, "test", dir+"/run", "waits", func(Mark) string { return "touch " + Quote(started) + "; sleep 3" })
		returned = time.Now()
	}()
	go func() {
		defer wg.Done()
		otherReply, other = AskTogether(context.Background(), tr, "test", dir+"/run", "answers", func(m Mark) string {
			return "sleep 1; " + m.Section("x", "") + "; printf done"
		})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for _, err := os.Stat(started); err != nil; _, err = os.Stat(started) {
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancelled := time.Now()
	cancel()
	wg.Wait()
	if !errors.Is(gaveUp, context.Canceled) || returned.Sub(cancelled) > time.Second {
		t.Fatalf("the caller that gave up got %v, %v after it did", gaveUp, returned.Sub(cancelled))
	}
	if other != nil || len(otherReply.Sections) != 1 || string(otherReply.Sections[0].Body) != "done" {
		t.Fatalf("the other caller got %+v, %v", otherReply, other)
	}
}

// Alone, a command is asked as AskPrivately asks it.
func TestAskTogetherAlone(t *testing.T) {
	tr := startInProcessServer(t, nil).transport(t, 1)
	reply, err := AskTogether(context.Background(), tr, "test", t.TempDir(), "alone", func(m Mark) string {
		return m.Section("x", "") + "; printf one"
	})
	if err != nil || len(reply.Sections) != 1 || string(reply.Sections[0].Body) != "one" {
		t.Fatalf("got %+v, %v", reply, err)
	}
}

// A command of a batch is answered when it ends, not when the batch does:
// the quick one's answer arrives while the slow one still waits for the
// test to let it go.
func TestAskTogetherAnswersEachAsItEnds(t *testing.T) {
	tr := startInProcessServer(t, nil).transport(t, 4)
	dir := t.TempDir()
	release := dir + "/release"
	if err := syscall.Mkfifo(release, 0o600); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		reply Reply
		err   error
	}
	slow, quick := make(chan answer, 1), make(chan answer, 1)
	go func() {
		r, err := AskTogether(t.Context(), tr, "test", dir+"/run", "slow", func(m Mark) string {
			return "read _ <" + Quote(release) + "; " + m.Section("pid", "") + "; echo $$"
		})
		slow <- answer{r, err}
	}()
	go func() {
		r, err := AskTogether(t.Context(), tr, "test", dir+"/run", "quick", func(m Mark) string {
			return m.Section("pid", "") + "; echo $$"
		})
		quick <- answer{r, err}
	}()
	var q answer
	select {
	case q = <-quick:
	case <-time.After(20 * time.Second):
		t.Fatal("the quick command was not answered while the slow one ran")
	}
	if err := os.WriteFile(release, []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := <-slow
	if q.err != nil || s.err != nil || len(q.reply.Sections) != 1 || len(s.reply.Sections) != 1 ||
		string(q.reply.Sections[0].Body) != string(s.reply.Sections[0].Body) {
		t.Fatalf("quick %+v, slow %+v: want both answered, from one shell", q, s)
	}
}
