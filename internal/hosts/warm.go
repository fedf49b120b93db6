package hosts

import (
	"context"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"
)

// Warming a host: its connection and first shell started in the background
// as soon as the provider is configured, while Terraform is still busy with
// its own work (schemas, the plan of each resource) before the walk's first
// call that reaches the host. The handshake and the login shell (a fifth
// of a second where ~/.bashrc is slow, a few round trips across a network)
// then overlap that work instead of following it. Each walk is a provider
// process of its own, so each pays them once.

// warmWithin bounds a warm-up: a host that takes longer is left to the
// first command, which dials again and reports what it finds.
const warmWithin = time.Minute

// Warm starts the connection to t's host and one shell on it, in the
// background, unless a shell was started already; t other than an SSH
// host does nothing. A command that finds no idle shell while it runs
// waits for that shell rather than starting another login shell beside
// it. A failure is only logged: the command that needs the host dials
// again, and says why it cannot.
func Warm(ctx context.Context, t Transport) {
	s, ok := transportAs[*SSH](t)
	if !ok || s.noShells.Load() {
		return
	}
	s.mu.Lock()
	if s.warming != nil || len(s.idle) > 0 || s.shellsStarted.Load() > 0 {
		s.mu.Unlock()
		return
	}
	done := make(chan struct{})
	s.warming = done
	s.mu.Unlock()
	// Configure's request ends when it returns: the warm-up outlives it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), warmWithin)
	go func() {
		defer cancel()
		defer func() {
			s.mu.Lock()
			s.warming = nil
			s.mu.Unlock()
			close(done) // after putIdle: a waiter woken by it finds the shell
		}()
		select {
		case s.starting <- struct{}{}:
		case <-ctx.Done():
			return
		}
		sh, err := s.startWhenFree(ctx)
		if err != nil {
			tflog.Debug(ctx, "warming the host: no shell started; its first command connects again", map[string]any{
				"host": s.cfg.Name, "address": s.cfg.Address, "error": err.Error()})
		}
		if sh != nil { // else a command's shell became idle first
			s.putIdle(sh)
		}
	}()
}

// warmingNow is closed once the warm-up under way ends; nil when none is.
func (s *SSH) warmingNow() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.warming
}
