package backends

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// Pending is host work a create has still to do before its next host
// command: its record written, its workspace made and filled. Across a
// network each command costs a round trip, so a step whose first command
// runs on the host takes what is pending (Step.RunWith, Take) and runs it
// first, in that command: a create's record, workspace and `compose up`
// cost one round trip together instead of one each. The parts run in the
// order they were added, each only when the one before succeeded, in the
// login directory: no part may change it (paths under a relative
// root_dir are relative to it). Nothing is pending across a step that
// does not take it: the registry does it first (Flush).
type Pending struct {
	h     *hosts.Host
	parts []pendingPart
}

type pendingPart struct {
	what string // for errors and the log: "writing the record of sandbox X"
	// script is built when the command is, so a record written by it
	// holds what the steps learned until then.
	script func(m hosts.Mark) string
	// outcome is the part's error for a result its script answered (nil
	// for any other).
	outcome func(result string) error
}

// pendingSection is the section kind announcing a part: a command that
// fails in one is that part's failure.
const pendingSection = "pending"

func (p *Pending) add(part pendingPart) { p.parts = append(p.parts, part) }

// Add queues a script that holds content (hosts.WriteScript): it runs
// privately, before the next command's own work.
func (p *Pending) Add(what string, script func(m hosts.Mark) string) {
	p.add(pendingPart{what: what, script: script})
}

// Empty says nothing is pending.
func (p *Pending) Empty() bool { return p == nil || len(p.parts) == 0 }

// Take returns the pending work as the start of a command built around
// m (empty when nothing is pending), and a function that turns that
// command's answer into the error of the part that failed (or nil, or the
// command's own error when it failed after them). The work is no longer
// pending: the command that holds it must run, and its answer go through
// outcome.
func (p *Pending) Take(m hosts.Mark) (script string, outcome func(hosts.Reply, error) error) {
	if p.Empty() {
		return "", func(_ hosts.Reply, err error) error { return err }
	}
	parts := p.parts
	p.parts = nil
	var b strings.Builder
	for i, part := range parts {
		fmt.Fprintf(&b, "%s\n{ %s\n} || exit $?\n", m.Section(pendingSection, fmt.Sprint(i)), part.script(m))
	}
	// The command's own work is announced too: a failure after it is the
	// command's, not the last part's.
	b.WriteString(m.Section(pendingSection, "done") + "\n")
	return b.String(), func(reply hosts.Reply, err error) error {
		last := -1
		for _, s := range reply.Sections {
			if s.Kind != pendingSection {
				continue
			}
			if s.Arg == "done" {
				last = len(parts)
			} else if _, serr := fmt.Sscan(s.Arg, &last); serr != nil {
				last = -1
			}
		}
		if reply.Result != "" && last >= 0 && last < len(parts) && parts[last].outcome != nil {
			if oerr := parts[last].outcome(reply.Result); oerr != nil {
				return oerr
			}
		}
		if err != nil && last < len(parts) {
			// Failed in a part, or before the first one's section arrived
			// (then in the first: nothing else had run).
			return fmt.Errorf("%s: %w", parts[max(last, 0)].what, err)
		}
		return err
	}
}

// ScratchDir is where the commands asked together (hosts.AskTogether)
// leave their answers while they run (below the root directory).
var ScratchDir = []string{".sandboxer", "run"}

// Flush runs what is pending now, in one command of its own, asked
// together with the other flushes of the host (hosts.AskTogether): the
// records of the creates an apply makes at once, written as each is
// ready, share a shell rather than start one each.
func (p *Pending) Flush(ctx context.Context) error {
	if p.Empty() {
		return nil
	}
	what := p.parts[0].what
	if len(p.parts) > 1 {
		what += fmt.Sprintf(" (and %d more)", len(p.parts)-1)
	}
	var outcome func(hosts.Reply, error) error
	reply, err := hosts.AskTogether(ctx, p.h, "pending", p.h.Path(ScratchDir...), what, func(m hosts.Mark) string {
		var script string
		script, outcome = p.Take(m)
		return script
	})
	return outcome(reply, err)
}

// addRecord queues sb's record, encoded when the command is built.
func (p *Pending) addRecord(sb *Sandbox) {
	p.add(pendingPart{what: "writing the record of sandbox " + sb.ID, script: func(hosts.Mark) string {
		data, err := json.MarshalIndent(sb, "", "  ")
		if err != nil {
			return fmt.Sprintf("echo %s >&2; exit 1", hosts.Quote("encoding the record: "+err.Error()))
		}
		return hosts.WriteScript(recordPath(p.h, sb.ID), append(data, '\n'), 0o600)
	}})
}

// addWorkspace queues makeWorkspace's work when it can travel in a
// command (a repo copy of a few KiB, no restore): ok says it was queued.
// (makeWorkspace is the same work, done by itself.)
func (p *Pending) addWorkspace(req Request, sb *Sandbox) (ok bool) {
	if req.Fill != nil || req.FillVolumes != nil {
		return false // a restore's fills start once the workspace is made
	}
	ws, repo, guard := sb.WorkspaceDir, req.Inputs["repo"], recordPath(req.Host, req.ID)
	made, ok := hosts.MakeDirInline(req.Host, ws, repo, guard)
	if !ok {
		return false
	}
	p.add(pendingPart{
		what:   workspaceWhat(ws, repo),
		script: made,
		outcome: func(result string) error {
			err := hosts.MakeDirOutcome(ws, guard, result)
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%s: %w", workspaceWhat(ws, repo), ErrWorkspaceExists)
			}
			return err
		},
	})
	if len(req.Env) > 0 {
		p.Add("writing the workspace .env", func(hosts.Mark) string {
			return hosts.WriteScript(ws+"/.env", []byte(DotEnv(req.Env)), 0o600)
		})
	}
	return true
}

// workspaceWhat names a workspace's making in errors.
func workspaceWhat(ws, repo string) string {
	if repo != "" {
		return fmt.Sprintf("unable to create workspace %s from %s", ws, repo)
	}
	return "unable to create workspace " + ws
}
