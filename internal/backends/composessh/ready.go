package composessh

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// Readiness: the command that brings a stack up waits on the host while
// its containers start (settleThenStatus), so that the status it answers is
// most often the ready one, and WaitReady, which decides, costs no
// further round trip across the network.

// maxSettle bounds the wait on the host after `compose up`.
const maxSettle = 10 * time.Minute

// settleMargin is the part of a create's deadline the wait on the host
// leaves to WaitReady: its report of what is not ready needs a command.
const settleMargin = 5 * time.Second

// settleThenStatus waits on the host, until the deadline of ctx less
// settleMargin (at most maxSettle), while a container of sb's project is
// created but not started, restarting, or running a healthcheck that has
// not yet passed or failed; then prints the status section (statusAfterUp)
// from its last listing, which is the status's own (statusScript's), so
// the status costs no engine CLI start of its own. It decides nothing:
// WaitReady does, on that status. The patterns match whole fields of a
// line (a service name holds no "|").
func settleThenStatus(ctx context.Context, m hosts.Mark, sb *backends.Sandbox, compose []string) string {
	status := m.Section(statusAfterUp, "") + "\n{ " + statusScript(sb, compose) + "; } || true\n"
	wait := maxSettle
	if d, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(d)-settleMargin)
	}
	if wait < time.Second {
		return status
	}
	return fmt.Sprintf(`_sbx_end=$(($(date +%%s) + %d)); _sbx_seen=
while _st=$(%s ps -a --filter %s --format %s) || { _sbx_seen=; false; }; do
	_sbx_seen=1
	case "$_st" in *"|created|"*|*"|restarting|"*|*"(health: starting)"*) ;; *) break ;; esac
	[ "$(date +%%s)" -lt "$_sbx_end" ] || break
	sleep 0.1 2>/dev/null || sleep 1
done
if [ -n "$_sbx_seen" ]; then %s
if test -d %s; then echo workspace; fi; printf '%%s\n' "$_st"
else %s; fi
`, int(wait/time.Second), engine(compose), hosts.Quote("label="+projectLabel+"="+sb.ComposeProject), hosts.Quote(containerFormat),
		m.Section(statusAfterUp, ""), hosts.Quote(sb.WorkspaceDir), strings.TrimSuffix(status, "\n"))
}

// statusAfterUp is the section holding the status read after `compose up`
// (or `start`, or `stop`).
const statusAfterUp = "status"

// WaitReady looks at the services until all of them run (and pass their
// healthchecks): first at what the command that brought them up saw, then
// at growing intervals, from 50 ms up to PollInterval, so a quick stack is
// seen ready quickly and a slow one costs few commands.
func (e *Extension) WaitReady(ctx context.Context, h *hosts.Host, sb *backends.Sandbox) (backends.Status, error) {
	compose, _, err := e.composeFor(ctx, h, sb)
	if err != nil {
		return backends.Status{}, err
	}
	wait := 50 * time.Millisecond
	// silent is the port found silent while every service ran, if they
	// did at the last look.
	var silent *silentPort
	// last is the status of the last look (seen: there was one): what a
	// deadline that ends a look reports, whose own error says only that.
	var last backends.Status
	seen := false
	for {
		var st backends.Status
		if v, ok := e.firstStatus.LoadAndDelete(sb.ID); ok {
			out, _ := v.(string) // only strings are stored
			st = parseStatus(out, sb)
		} else if st, err = e.status(ctx, h, sb, compose); err != nil {
			if ctx.Err() != nil && seen {
				return backends.Status{}, e.notReadyInTime(ctx, h, sb, compose, silent, last)
			}
			return backends.Status{}, err
		}
		last, seen = st, true
		if st.State != backends.StatusReady {
			silent = nil
		} else {
			if !sb.WaitForPorts {
				return st, nil
			}
			s := e.silentPort(ctx, h, sb, st)
			if s == nil {
				return st, nil
			}
			if s.never {
				return backends.Status{}, fmt.Errorf("sandbox %s: wait_for_ports cannot check service %q port %d/tcp: %w", sb.ID, s.service, s.port, s.err)
			}
			// A check the deadline cut short says nothing of its port: the
			// port found silent before it is the one to name.
			if silent == nil || ctx.Err() == nil {
				silent = s
			}
		}
		for _, s := range st.Services {
			if s.State == "exited" || s.State == "dead" {
				return backends.Status{}, fmt.Errorf("service %q %s before the sandbox became ready; the services not ready:\n%s",
					s.Name, s.State, backends.NotReadyReport(ctx, h, e, sb, st))
			}
		}
		select {
		case <-ctx.Done():
			return backends.Status{}, e.notReadyInTime(ctx, h, sb, compose, silent, st)
		case <-time.After(wait):
		}
		wait = min(2*wait, max(e.PollInterval, 50*time.Millisecond))
	}
}

// notReadyInTime is WaitReady's error when its deadline passed: the port
// found silent, if any, else the services not ready at the last look (st).
func (e *Extension) notReadyInTime(ctx context.Context, h *hosts.Host, sb *backends.Sandbox, compose []string, silent *silentPort, st backends.Status) error {
	if silent != nil {
		return e.neverAccepted(ctx, h, sb, compose, silent)
	}
	return fmt.Errorf("sandbox %s was not ready in time (services: %s): %w; the services not ready:\n%s",
		sb.ID, backends.Describe(st.Services), ctx.Err(), backends.NotReadyReport(ctx, h, e, sb, st))
}

// neverAccepted is WaitReady's error when its deadline passed with every
// service running and silent's port silent: it names the port, with the
// service's last log lines (read past the deadline, for up to 15 s).
func (e *Extension) neverAccepted(ctx context.Context, h *hosts.Host, sb *backends.Sandbox, compose []string, silent *silentPort) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	logs, _ := hosts.Output(dctx, h, inWorkspace(sb, compose, "logs", "--no-color", "--tail", "20", silent.service))
	return fmt.Errorf("sandbox %s was not ready in time: service %q never accepted a connection on port %d/tcp "+
		"(wait_for_ports; last try: %v); last log lines:\n%s", sb.ID, silent.service, silent.port, silent.err, tail(string(logs), 2000))
}

// createMarker is the variable the command that brings a sandbox up
// exports, valued with its id: every process of that command carries it.
const createMarker = "SANDBOXER_CREATE"

// lateCommands is a teardown's first step: it kills every process of the
// host's user that carries the sandbox's createMarker, until none is left.
// A create's command whose connection was lost without the host noticing
// (a black-holed link) runs on; were it left to, its `compose up` would
// make containers after the teardown had removed the sandbox's, with no
// record naming them. (The marker is built from two parts: a local host
// passes a script in its shell's environment, where the marker whole
// would be found, and the teardown would kill itself.)
func lateCommands(m hosts.Mark, id string) string {
	return fmt.Sprintf(`%s
_m=%s; _m="$_m=%s"; _i=0
while _p=$(grep -l -- "$_m" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3); [ -n "$_p" ]; do
	[ "$_i" -lt 50 ] || { echo "processes of the sandbox's create still run: $_p" >&2; exit 1; }
	kill -s KILL $_p 2>/dev/null; _i=$((_i + 1))
done
`, m.Section("late", ""), hosts.Quote(createMarker), id)
}
