package backends

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// A sandbox's logs: on demand (sandboxer_logs), and in the diagnostic of a
// create or a start that failed. Both read the containers the extension's
// ServiceFilters pick, running or not, with the engine's own `logs`, the
// same on compose v2, v1 and swarm.

// LogsRequest asks for the logs of some of a sandbox's services.
type LogsRequest struct {
	SandboxID string
	Services  []string // empty: every service
	Tail      int      // lines per container; 0: all
	Since     string   // a duration ("10m") or an RFC 3339 time; empty: from the start
	Out       io.Writer
}

// Logs writes the logs of a sandbox's services to req.Out, each line
// prefixed with its service ("web | ..."), service by service.
func (r *Registry) Logs(ctx context.Context, h *hosts.Host, req LogsRequest) error {
	sb, err := r.Sandbox(ctx, h, req.SandboxID)
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("sandbox %s is not on host %q", req.SandboxID, h.Host())
	}
	if err != nil {
		return err
	}
	services := req.Services
	if len(services) == 0 {
		services = sb.Services
	}
	for _, s := range services {
		if !slices.Contains(sb.Services, s) {
			return fmt.Errorf("sandbox %s has no service %q; its services: %s", sb.ID, s, strings.Join(sb.Services, ", "))
		}
	}
	if err := CheckSince(req.Since); err != nil {
		return err
	}
	execer, engine, err := r.execer(ctx, h, sb)
	if err != nil {
		return err
	}
	var script strings.Builder
	for _, s := range services {
		script.WriteString(logsScript(engine, execer.ServiceFilters(sb, s), s, req.Tail, req.Since))
	}
	if err := h.Run(ctx, script.String(), nil, req.Out); err != nil {
		return fmt.Errorf("unable to read the logs of sandbox %s: %w", sb.ID, err)
	}
	return nil
}

// CheckSince holds a since argument to what the engine takes: a duration
// or an RFC 3339 time.
func CheckSince(since string) error {
	if since == "" {
		return nil
	}
	if d, err := time.ParseDuration(since); err == nil && d > 0 {
		return nil
	}
	if _, err := time.Parse(time.RFC3339, since); err == nil {
		return nil
	}
	return fmt.Errorf("since %q is neither a duration such as 10m nor an RFC 3339 time", since)
}

// execer is sb's extension as an Execer, and the host's engine.
func (r *Registry) execer(ctx context.Context, h *hosts.Host, sb *Sandbox) (Execer, string, error) {
	ext, err := r.Extension(sb.Extension)
	if err != nil {
		return nil, "", err
	}
	execer, ok := ext.(Execer)
	if !ok {
		return nil, "", fmt.Errorf("sandbox %s (%s) has no services", sb.ID, sb.Extension)
	}
	engine, err := execer.ExecEngine(ctx, h)
	return execer, engine, err
}

// containersOf is the shell code setting $ids to the containers the
// filters pick, running or not, oldest name first.
func containersOf(engine string, filters []string) string {
	ps := []string{engine, "ps", "-a", "--format", "{{.Names}} {{.ID}}"}
	for _, f := range filters {
		ps = append(ps, "--filter", f)
	}
	return "ids=$(" + hosts.Command(ps...) + " | sort | cut -d' ' -f2) || exit 1\n"
}

// logsScript prints the logs of one service's containers, prefixed.
func logsScript(engine string, filters []string, service string, tail int, since string) string {
	args := []string{engine, "logs"}
	if tail > 0 {
		args = append(args, "--tail", strconv.Itoa(tail))
	}
	if since != "" {
		args = append(args, "--since", since)
	}
	return containersOf(engine, filters) + "for id in $ids; do " + hosts.Command(args...) + ` "$id" 2>&1 | sed "s/^/"` +
		hosts.Quote(service+" | ") + `"/" || exit 1; done` + "\n"
}

// NotReadyReport says, for each service of st that is not ready, what its
// containers' states and exit codes are, the last outputs of their
// healthcheck, and their last log lines: what a failed create or start
// shows. It reads the host past ctx's end (for up to 15 s), since a
// timeout is often why it is asked; a report that cannot be read says so.
func NotReadyReport(ctx context.Context, h *hosts.Host, execer Execer, sb *Sandbox, st Status) string {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	engine, err := execer.ExecEngine(rctx, h)
	if err != nil {
		return "(the services' states could not be read: " + err.Error() + ")"
	}
	var script strings.Builder
	var names []string
	for _, s := range st.Services {
		if s.State == "running" || s.State == ServiceCompleted {
			continue
		}
		names = append(names, s.Name)
		fmt.Fprintf(&script, "echo %s\n%sfor id in $ids; do %s \"$id\" || exit 1; %s \"$id\" 2>&1 | sed 's/^/    /'; done\n",
			hosts.Quote("service "+s.Name+" ("+s.State+"):"), containersOf(engine, execer.ServiceFilters(sb, s.Name)),
			hosts.Command(engine, "inspect", "--format", notReadyFormat), hosts.Command(engine, "logs", "--tail", "20"))
	}
	if len(names) == 0 {
		return ""
	}
	out, err := hosts.Output(rctx, h, script.String())
	if err != nil {
		return fmt.Sprintf("(the states of services %s could not be read: %v)", strings.Join(names, ", "), err)
	}
	return tailString(string(out), 6000)
}

// notReadyFormat is a container's state, exit code and its healthcheck's
// last outputs, as `inspect --format` prints them.
const notReadyFormat = `  container {{.Name}}: {{.State.Status}}, exit code {{.State.ExitCode}}` +
	`{{if .State.Health}}, health {{.State.Health.Status}}{{range .State.Health.Log}}` +
	"\n    healthcheck (exit {{.ExitCode}}): {{printf \"%.300s\" .Output}}{{end}}{{end}}\n  last log lines:"

func tailString(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
