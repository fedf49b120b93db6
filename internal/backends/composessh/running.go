package composessh

import (
	"context"
	"errors"
	"fmt"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

var _ backends.Stopper = (*Extension)(nil)

// The stops (starts) an apply asks of a host at once run in one command
// (hosts.AskTogether): one shell for all of them rather than one each,
// which the connection starts a few at a time and caps.

// StopServices is what is pending, `compose stop` of the sandbox's own
// project, and the status after it, in one command.
func (e *Extension) StopServices(ctx context.Context, h *hosts.Host, sb *backends.Sandbox, pending *backends.Pending) (backends.Status, error) {
	status, found, err := e.askTogether(ctx, h, sb, pending, "compose stop", "stopping", func(m hosts.Mark, compose []string) string {
		return inWorkspace(sb, compose, stopArgs...) + " || exit $?\n" + m.Section(statusAfterUp, "") + "\n" + statusScript(sb, compose) + "\n"
	})
	if err == nil && !found {
		err = errors.New("its status after the stop is missing")
	}
	if err != nil {
		return backends.Status{}, fmt.Errorf("unable to stop sandbox %s: %w", sb.ID, err)
	}
	return parseStatus(status, sb), nil
}

// StartServices is what is pending, then `compose start`: the containers
// as they were created, with their volumes and networks (an in-place
// restore's Start brings the stack `up` instead, to take a restored
// compose file); the same command takes WaitReady's first look.
func (e *Extension) StartServices(ctx context.Context, h *hosts.Host, sb *backends.Sandbox, pending *backends.Pending) error {
	status, found, err := e.askTogether(ctx, h, sb, pending, "compose start", "starting", func(m hosts.Mark, compose []string) string {
		return inWorkspace(sb, compose, "start") + " || exit $?\n" + settleThenStatus(ctx, m, sb, compose)
	})
	if err != nil {
		return fmt.Errorf("unable to start sandbox %s: %w", sb.ID, err)
	}
	if found {
		e.firstStatus.Store(sb.ID, status)
	}
	return nil
}

// askTogether runs what is pending, then work, in one command asked
// together with the others of group (hosts.AskTogether) with sb's compose
// command (withCompose), and returns the status section (statusAfterUp)
// work answered, if any.
func (e *Extension) askTogether(ctx context.Context, h *hosts.Host, sb *backends.Sandbox, pending *backends.Pending, group, doing string,
	work func(m hosts.Mark, compose []string) string) (status string, found bool, err error) {
	var reply hosts.Reply
	err = e.withCompose(ctx, h, sb, func(compose []string) error {
		outcome := func(_ hosts.Reply, err error) error { return err } // until the command is built
		var err error
		reply, err = hosts.AskTogether(ctx, h, group, h.Path(backends.ScratchDir...), doing+" sandbox "+sb.ID, func(m hosts.Mark) string {
			var taken string
			taken, outcome = pending.Take(m)
			return taken + work(m, compose)
		})
		return outcome(reply, err)
	})
	if err != nil {
		return "", false, err
	}
	for _, s := range reply.Sections {
		if s.Kind == statusAfterUp {
			return string(s.Body), true, nil
		}
	}
	return "", false, nil
}
