package composessh

import (
	"context"
	"fmt"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

var _ backends.Stopper = (*Extension)(nil)

// The stops (starts) an apply asks of a host at once run in one command
// (hosts.AskTogether): one shell for all of them rather than one each,
// which the connection starts a few at a time and caps.

// scratchDir is where the stops and starts asked together leave their
// answers while they run (below the root directory).
var scratchDir = []string{".sandboxer", "run"}

// StopServices is what is pending, `compose stop` of the sandbox's own
// project, and the status after it, in one command.
func (e *Extension) StopServices(ctx context.Context, h *hosts.Host, sb *backends.Sandbox, pending *backends.Pending) (backends.Status, error) {
	var reply hosts.Reply
	err := e.withCompose(ctx, h, sb, func(compose []string) error {
		outcome := func(_ hosts.Reply, err error) error { return err } // until the command is built
		var err error
		reply, err = hosts.AskTogether(ctx, h, "compose stop", h.Path(scratchDir...), "stopping sandbox "+sb.ID, func(m hosts.Mark) string {
			var work string
			work, outcome = pending.Take(m)
			return work + inWorkspace(sb, compose, stopArgs...) + " || exit $?\n" + m.Section(statusAfterUp, "") + "\n" + statusScript(sb, compose) + "\n"
		})
		return outcome(reply, err)
	})
	if err != nil {
		return backends.Status{}, fmt.Errorf("unable to stop sandbox %s: %w", sb.ID, err)
	}
	for _, s := range reply.Sections {
		if s.Kind == statusAfterUp {
			return parseStatus(string(s.Body), sb), nil
		}
	}
	return backends.Status{}, fmt.Errorf("unable to stop sandbox %s: its status after the stop is missing", sb.ID)
}

// StartServices is what is pending, then `compose start`: the containers
// as they were created, with their volumes and networks (an in-place
// restore's Start brings the stack `up` instead, to take a restored
// compose file); the same command takes WaitReady's first look.
func (e *Extension) StartServices(ctx context.Context, h *hosts.Host, sb *backends.Sandbox, pending *backends.Pending) error {
	var reply hosts.Reply
	err := e.withCompose(ctx, h, sb, func(compose []string) error {
		outcome := func(_ hosts.Reply, err error) error { return err } // until the command is built
		var err error
		reply, err = hosts.AskTogether(ctx, h, "compose start", h.Path(scratchDir...), "starting sandbox "+sb.ID, func(m hosts.Mark) string {
			var work string
			work, outcome = pending.Take(m)
			return work + inWorkspace(sb, compose, "start") + " || exit $?\n" + settleThenStatus(ctx, m, sb, compose)
		})
		return outcome(reply, err)
	})
	if err != nil {
		return fmt.Errorf("unable to start sandbox %s: %w", sb.ID, err)
	}
	for _, s := range reply.Sections {
		if s.Kind == statusAfterUp {
			e.firstStatus.Store(sb.ID, string(s.Body))
		}
	}
	return nil
}
