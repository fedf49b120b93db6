package composessh

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// Teardown runs compose down (volumes and orphans too), then removes by
// label anything of the project that compose did not (a half-created stack,
// a deleted compose file), then the workspace. Already gone is success.
func (e *Extension) Teardown(ctx context.Context, h *hosts.Host, sb *backends.Sandbox) error {
	return e.TeardownThen(ctx, h, sb, "")
}

var _ backends.Finisher = (*Extension)(nil)

// teardownMargin is the part of a teardown's deadline its command leaves
// to the answer's way back: the command bounds its engine operations by
// the deadline less this, so that one the engine does not finish is named
// by the command's own answer (engineStuck).
const teardownMargin = 3 * time.Second

// teardownLate is the status a teardown's command exits with when one of
// its engine operations outlived its bound (timeout(1)'s own).
const teardownLate = 124

// TeardownThen is Teardown whose one command removes the workspace too,
// then runs then. The teardowns an apply asks of a host at once run in one
// command (hosts.AskTogether), each holding one of the host's network
// slots for its engine operations only.
func (e *Extension) TeardownThen(ctx context.Context, h *hosts.Host, sb *backends.Sandbox, then string) error {
	e.firstStatus.Delete(sb.ID) // a create that failed before WaitReady
	// The record's compose command, when it has one: should the host no
	// longer have it, `compose down` fails, which the engine's listings
	// below make up for.
	compose, _, err := e.composeFor(ctx, h, sb)
	if err != nil {
		return err
	}
	eng := engine(compose)
	rmWorkspace, refused := backends.RemoveWorkspaceScript(h, sb.WorkspaceDir, sb.ID)
	reply, err := hosts.AskTogether(ctx, h, "teardown", h.Path(backends.ScratchDir...), "tearing sandbox "+sb.ID+" down", func(m hosts.Mark) string {
		return e.teardownScript(ctx, m, h, sb, compose, rmWorkspace, refused == nil, then)
	})
	if err != nil {
		var ce *hosts.CommandError
		if ctx.Err() != nil || (errors.As(err, &ce) && ce.ExitCode == teardownLate) {
			err = engineStuck(ctx, h, sb, eng, reply)
		}
		return fmt.Errorf("unable to remove the containers, networks and volumes of sandbox %s: %w", sb.ID, err)
	}
	return refused
}

// teardownScript is a teardown's command: each engine operation announced
// as a section and bounded by the deadline of ctx less teardownMargin, so
// that one that outlives it (a wedged engine) ends the command with
// teardownLate, its section the last. Then the network reservation, then
// the workspace (when removing it is allowed), then then.
func (e *Extension) teardownScript(ctx context.Context, m hosts.Mark, h *hosts.Host, sb *backends.Sandbox, compose []string,
	rmWorkspace string, removable bool, then string) string {
	project := sb.ComposeProject
	if project == "" {
		project = ProjectName(sb.ID)
	}
	bound := time.Hour // no deadline: bounded all the same, as nothing should hang for ever
	if d, ok := ctx.Deadline(); ok {
		bound = max(time.Until(d)-teardownMargin, time.Second)
	}
	eng := "_sbx_bounded " + engine(compose)
	filter := hosts.Quote("label=" + projectLabel + "=" + project)
	var script strings.Builder
	script.WriteString(lateCommands(m, sb.ID))
	fmt.Fprintf(&script, `_sbx_end=$(($(date +%%s) + %d))
_sbx_bounded() { _sbx_l=$((_sbx_end - $(date +%%s))); [ "$_sbx_l" -gt 0 ] || _sbx_l=1; timeout -k 5 "$_sbx_l" "$@"; }
late() { [ "$1" -ne %d ] || exit %[2]d; }
unanswered() { late "$1"; echo "the container engine did not answer: what the sandbox made there may remain" >&2; exit 1; }
`, int(bound/time.Second), teardownLate)
	// The project's running containers stop before the slot is taken: the
	// services' ends (up to the timeout each) make or remove no network,
	// and held in a slot they kept the other teardowns waiting (ten took
	// 2.3-3.4 s four at a time, 2.2-2.4 s stopped first, on the host
	// alone). The engine's per-container network work (its endpoints) is
	// then done outside the cap: a destroy of 500 held (ADR 0014). All at
	// once, as the engine stops them: a destroy removes the volumes too,
	// so there is no order of the services' ends to keep.
	fmt.Fprintf(&script, "%s; ids=$(%s ps -q --filter %s) || late $?\nif [ -n \"$ids\" ]; then %s; %[2]s stop -t 5 $ids >/dev/null 2>&1 || late $?; fi\n",
		m.Section("step", "'ps'"), eng, filter, m.Section("step", "'stop'"))
	// The wait for a slot is a section of its own, bounded as the engine's
	// steps are, so that a deadline reached there is not taken for a stuck
	// engine.
	fmt.Fprintf(&script, "%s\n", m.Section(slotStep, ""))
	script.WriteString(e.takeSlot(h, true))
	if sb.ComposeFile != "" && sb.WorkspaceDir != "" {
		down := &backends.Sandbox{WorkspaceDir: sb.WorkspaceDir, ComposeProject: project, ComposeFile: sb.ComposeFile, ID: sb.ID,
			NetworkOverride: sb.NetworkOverride, Rendered: sb.Rendered}
		// In a shell of its own: its cd must not move what follows, whose
		// paths may be relative to the login directory (a relative root_dir).
		fmt.Fprintf(&script, "%s\nif test -f %s; then _sbx_bounded sh -c %s >/dev/null 2>&1 || late $?; fi\n", m.Section("step", "'compose down'"),
			hosts.Quote(sb.WorkspaceDir+"/"+backends.ComposeFileOf(down)),
			hosts.Quote(inWorkspace(down, compose, "down", "--volumes", "--remove-orphans", "--timeout", "5")))
	}
	// An engine that does not answer (stopped, restarting) lists nothing:
	// every listing must succeed, or nothing is known to be gone and the
	// record and workspace, which name what to remove, must stay.
	// What is left is listed first: after a `compose down`, most often
	// nothing, and the engine CLI's starts (a tenth of a second of CPU
	// each) are what many teardowns at once wait on.
	fmt.Fprintf(&script, `left() { %[1]s ps -aq --filter %[2]s && %[1]s network ls -q --filter %[2]s && %[1]s volume ls -q --filter %[2]s; }
%[7]s; left=$(left) || unanswered $?
if [ -n "$left" ]; then
%[4]s; ids=$(%[1]s ps -aq --filter %[2]s) || unanswered $?; if [ -n "$ids" ]; then %[1]s rm -f -v $ids >/dev/null || late $?; fi
%[5]s; ids=$(%[1]s network ls -q --filter %[2]s) || unanswered $?; if [ -n "$ids" ]; then %[1]s network rm $ids >/dev/null || late $?; fi
%[6]s; ids=$(%[1]s volume ls -q --filter %[2]s) || unanswered $?; if [ -n "$ids" ]; then %[1]s volume rm -f $ids >/dev/null || late $?; fi
%[7]s; left=$(left) || unanswered $?
if [ -n "$left" ]; then echo "resources of project "%[3]s" remain: $left" >&2; exit 1; fi
fi
`, eng, filter, hosts.Quote(project), m.Section("step", "'rm -f -v'"), m.Section("step", "'network rm'"),
		m.Section("step", "'volume rm -f'"), m.Section("step", "'ps'"))
	script.WriteString(releaseSlot)
	// The network reservation goes last, once its networks are gone. Its
	// path comes from the id, never from the record.
	fmt.Fprintf(&script, "rm -f -- %s\n", hosts.Quote(overridePath(h, sb)))
	// Then the workspace, and what the caller's then does, by the same
	// command. A workspace that must not be removed fails the teardown
	// once the rest is done.
	if removable {
		if rmWorkspace != "" {
			fmt.Fprintf(&script, "%s\n( %s\n) || exit 1\n", m.Section(workspaceStep, ""), rmWorkspace)
		}
		if then != "" {
			fmt.Fprintf(&script, "%s\n", then)
		}
	}
	return script.String()
}

// workspaceStep is the section of a teardown's answer announcing the
// removal of the workspace, after the engine's steps.
const workspaceStep = "workspace"

// slotStep is the section of a teardown's answer announcing its wait for
// one of the host's network slots.
const slotStep = "slot"

// engineProbeTimeout bounds the engine probe of engineStuck.
const engineProbeTimeout = 10 * time.Second

// engineStuck explains a teardown that outlived its deadline: the engine
// operation it was in (the last step section of its answer, when it
// answered) and whether the engine answers at all, probed by a short
// bounded call. The operation was killed on the host (timeout(1)), or
// with the shell's process group.
func engineStuck(ctx context.Context, h *hosts.Host, sb *backends.Sandbox, eng string, reply hosts.Reply) error {
	step := "an engine operation"
	if len(reply.Sections) > 0 {
		switch last := reply.Sections[len(reply.Sections)-1]; last.Kind {
		case workspaceStep:
			return fmt.Errorf("the removal of workspace %s on host %q did not finish before the deadline (%w): the sandbox stays in state, "+
				"and the next destroy removes what remains", sb.WorkspaceDir, h.Host(), context.DeadlineExceeded)
		case slotStep:
			return fmt.Errorf("sandbox %s waited for one of host %q's network slots until the deadline (%w): other compose "+
				"operations under its root_dir held all of them (max_network_operations). The sandbox stays in state, and the next "+
				"destroy removes what remains", sb.ID, h.Host(), context.DeadlineExceeded)
		case "step":
			step = "`" + eng + " " + last.Arg + "`"
		}
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), engineProbeTimeout)
	defer cancel()
	answer := "still answers `" + eng + " version`, so that operation itself is stuck"
	if err := h.Run(pctx, eng+" version --format '{{.Server.Version}}'", nil, nil); err != nil {
		answer = fmt.Sprintf("did not answer `%s version` within %s either (%v): it has stopped answering", eng, engineProbeTimeout, err)
	}
	return fmt.Errorf("the container engine on host %q did not finish %s before the deadline (%w), and it %s. "+
		"Check the engine on the host (`%s info`; restart it if it does not answer). The sandbox stays in state: "+
		"the next destroy removes what remains", h.Host(), step, context.DeadlineExceeded, answer, eng)
}
