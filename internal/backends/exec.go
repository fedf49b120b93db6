package backends

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// Commands run in a sandbox's service (sandboxer_exec, sandboxer_command):
// `exec` in the service's first running container, through the host's
// pooled connection.

// Execer is an Extension whose services run in containers that the host's
// engine reaches with `exec`.
type Execer interface {
	// ExecEngine is the container engine's CLI on h: docker or podman.
	ExecEngine(ctx context.Context, h *hosts.Host) (string, error)
	// ServiceFilters are the `ps --filter` values that pick out the
	// containers of one of sb's services.
	ServiceFilters(sb *Sandbox, service string) []string
}

// ExecRequest is a command to run in one service of a sandbox.
type ExecRequest struct {
	SandboxID, Service string
	Command            []string // argv: no shell unless the command names one
	Env                map[string]string
	User, Workdir      string
	// Stdout receives the command's standard output as it comes (nil
	// discards it). Stderr receives its standard error once it has ended;
	// nil merges it into Stdout as it comes.
	Stdout, Stderr io.Writer
}

// ExecResult is how a command ended.
type ExecResult struct {
	ExitCode  int
	Container string // the container it ran in
}

// ErrServiceNotRunning: the service has no running container to run a
// command in (the sandbox is stopped, or the service exited).
var ErrServiceNotRunning = errors.New("no running container")

// ErrSandboxStopped: the sandbox's record asks for its services stopped.
var ErrSandboxStopped = errors.New("is stopped")

// execStderrMax bounds the standard error an exec keeps for Stderr.
const execStderrMax = 1 << 20

// CheckExec checks a command for a sandbox before anything runs: the
// sandbox, its service, and that it is not stopped on purpose. The plan
// asks it when the sandbox is known; Exec asks it again.
func CheckExec(sb *Sandbox, service string, command []string) error {
	if len(command) == 0 || command[0] == "" {
		return errors.New("the command is empty: give the program and its arguments as a list, e.g. [\"sh\", \"-c\", \"...\"]")
	}
	if !slices.Contains(sb.Services, service) {
		return fmt.Errorf("sandbox %s has no service %q; its services: %s", sb.ID, service, strings.Join(sb.Services, ", "))
	}
	if sb.Stopped() {
		return fmt.Errorf("sandbox %s %w (desired_state = %q): start it before running a command in it", sb.ID, ErrSandboxStopped, DesiredStopped)
	}
	return nil
}

// Exec runs a command in the first running container of a sandbox's
// service (by container name) and returns its exit code; a non-zero exit
// is a result, not an error. When ctx ends first, the command's processes
// in the container are killed (every process that inherited its marker
// variable), so nothing of it is left running.
func (r *Registry) Exec(ctx context.Context, h *hosts.Host, req ExecRequest) (ExecResult, error) {
	sb, err := r.Sandbox(ctx, h, req.SandboxID)
	if errors.Is(err, ErrNotFound) {
		return ExecResult{}, fmt.Errorf("sandbox %s is not on host %q", req.SandboxID, h.Host())
	}
	if err != nil {
		return ExecResult{}, err
	}
	if err := CheckExec(sb, req.Service, req.Command); err != nil {
		return ExecResult{}, err
	}
	if err := CheckEnv(req.Env); err != nil {
		return ExecResult{}, err
	}
	ext, err := r.Extension(sb.Extension)
	if err != nil {
		return ExecResult{}, err
	}
	execer, ok := ext.(Execer)
	if !ok {
		return ExecResult{}, fmt.Errorf("sandbox %s (%s) has no services to run a command in", sb.ID, sb.Extension)
	}
	engine, err := execer.ExecEngine(ctx, h)
	if err != nil {
		return ExecResult{}, err
	}
	m := hosts.NewMark()
	token := string(hosts.NewMark())
	// The env's values go in a file of the workspace (mode 0600) that the
	// script reads and removes first: never on a command line. The script
	// itself takes no input, so that a timeout can kill it.
	envFile := ""
	if len(req.Env) > 0 {
		envFile = sb.WorkspaceDir + "/.sandboxer-exec-" + token[:12] + ".env"
		var env bytes.Buffer
		for _, k := range slices.Sorted(maps.Keys(req.Env)) {
			fmt.Fprintf(&env, "export %s=%s\n", k, hosts.Quote(req.Env[k]))
		}
		if err := hosts.WriteFile(ctx, h, envFile, env.Bytes(), 0o600); err != nil {
			return ExecResult{}, fmt.Errorf("unable to pass the env to the command: %w", err)
		}
	}
	script := execScript(m, engine, execer.ServiceFilters(sb, req.Service), token, envFile, req)
	out := &execStream{mark: string(m), out: req.Stdout, framed: req.Stderr != nil}
	ctx = tflog.SetField(tflog.SetField(ctx, "sandbox_id", sb.ID), "service", req.Service)
	tflog.Debug(ctx, "running a command in the service", map[string]any{"program": req.Command[0]})
	runErr := h.Run(ctx, script, nil, out)
	out.flush()
	if runErr != nil && ctx.Err() != nil && out.container != "" {
		return ExecResult{Container: out.container}, errors.Join(fmt.Errorf("the command did not end in time: %w", ctx.Err()),
			r.killExec(ctx, h, engine, out.container, token))
	}
	res := ExecResult{Container: out.container}
	var ce *hosts.CommandError
	if !out.framed && out.container != "" && errors.As(runErr, &ce) {
		// Merged: the script ends with the command's exit status.
		res.ExitCode = ce.ExitCode
		return res, nil
	}
	if runErr != nil {
		return ExecResult{}, fmt.Errorf("unable to run the command in service %q of sandbox %s: %w", req.Service, sb.ID, runErr)
	}
	if !out.framed && out.container != "" {
		return res, nil
	}
	word, rest, _ := strings.Cut(out.trailerLine, " ")
	switch word {
	case "exit":
		if res.ExitCode, err = strconv.Atoi(rest); err != nil {
			return res, fmt.Errorf("unable to read the command's exit status %q", rest)
		}
	case "absent":
		return res, fmt.Errorf("service %q of sandbox %s: %w (stopped, or exited)", req.Service, sb.ID, ErrServiceNotRunning)
	default:
		return res, fmt.Errorf("the command in service %q of sandbox %s ended without its exit status", req.Service, sb.ID)
	}
	if req.Stderr != nil {
		_, _ = req.Stderr.Write(out.trailer)
	}
	return res, nil
}

// execScript picks the service's first running container by name, names
// it, runs the command there with the env read from envFile (`-e NAME`
// takes the value from the engine CLI's environment), and ends
// with its exit status, then its standard error when it is kept apart.
func execScript(m hosts.Mark, engine string, filters []string, token, envFile string, req ExecRequest) string {
	var b strings.Builder
	if envFile != "" {
		fmt.Fprintf(&b, "f=%s; . \"$f\"; rc=$?; rm -f -- \"$f\"; [ \"$rc\" = 0 ] || exit 1\n", hosts.Quote(envFile))
	}
	ps := []string{engine, "ps", "--filter", "status=running", "--format", "{{.Names}} {{.ID}}"}
	for _, f := range filters {
		ps = append(ps, "--filter", f)
	}
	fmt.Fprintf(&b, "cid=$(%s | sort | head -n 1 | cut -d' ' -f2) || exit 1\n", hosts.Command(ps...))
	fmt.Fprintf(&b, "if [ -z \"$cid\" ]; then printf '\\n%s absent\\n'; exit 0; fi\n", m)
	fmt.Fprintf(&b, "printf '%s container %%s\\n' \"$cid\"\n", m)
	args := []string{engine, "exec", "-e", ExecMarker + "=" + token}
	for _, k := range slices.Sorted(maps.Keys(req.Env)) {
		args = append(args, "-e", k)
	}
	if req.User != "" {
		args = append(args, "-u", req.User)
	}
	if req.Workdir != "" {
		args = append(args, "-w", req.Workdir)
	}
	cmd := hosts.Command(args...) + ` "$cid" ` + hosts.Command(req.Command...)
	if req.Stderr == nil {
		// Streamed: no trailer to hold output back for; the script's
		// exit status is the command's.
		fmt.Fprintf(&b, "exec %s 2>&1\n", cmd)
		return b.String()
	}
	fmt.Fprintf(&b, "e=$(mktemp) || exit 1\n%s 2>\"$e\"; rc=$?\nprintf '\\n%s exit %%s\\n' \"$rc\"; head -c %d \"$e\"; rm -f \"$e\"\n",
		cmd, m, execStderrMax)
	return b.String()
}

// ExecMarker is the variable every process of an exec inherits: what a
// timeout's kill finds them by.
const ExecMarker = "SANDBOXER_EXEC"

// KillScript is the sh script that kills every process of a container
// whose environment holds $1 (ExecMarker=<token>), until none is left; it
// fails naming those that remain.
const KillScript = `i=0; while [ "$i" -lt 50 ]; do p=$(grep -l "$1" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3); ` +
	`[ -n "$p" ] || exit 0; kill -KILL $p 2>/dev/null; i=$((i+1)); done; echo "processes remain: $p" >&2; exit 1`

// killExec kills, past ctx's end, every process in container that carries
// the exec's marker, until none is left.
func (r *Registry) killExec(ctx context.Context, h *hosts.Host, engine, container, token string) error {
	kctx, cancel := detached(ctx)
	defer cancel()
	if err := h.Run(kctx, hosts.Command(engine, "exec", container, "sh", "-c", KillScript, "sh", ExecMarker+"="+token), nil, nil); err != nil {
		return fmt.Errorf("killing the command's processes in container %s failed; they may still run: %w", container, err)
	}
	return nil
}

// execStream passes the command's output through to out as it comes,
// without the frame lines around it: the container line first, and, when
// framed, the trailer (exit status, then standard error) last, for which
// bytes that could begin the trailer's mark are held back until it is
// clear they do not.
type execStream struct {
	mark        string
	out         io.Writer
	framed      bool
	pending     []byte
	started     bool // the container line was read
	container   string
	inTrailer   bool
	trailerLine string
	trailer     []byte // after the trailer's line: standard error
}

func (s *execStream) Write(p []byte) (int, error) {
	if s.inTrailer {
		s.trailer = append(s.trailer, p...)
		return len(p), nil
	}
	s.pending = append(s.pending, p...)
	if !s.started {
		head := s.mark + " container "
		if i := bytes.IndexByte(s.pending, '\n'); i >= 0 {
			if line, ok := bytes.CutPrefix(s.pending[:i], []byte(head)); ok {
				s.container = string(line)
				s.pending = s.pending[i+1:]
				s.started = true
			}
		}
		if !s.started && !bytes.HasPrefix(s.pending, []byte("\n"+s.mark)) {
			if len(s.pending) < len(head) || bytes.HasPrefix(s.pending, []byte(head)) {
				return len(p), nil
			}
			s.started = true // not framed: pass it on
		}
	}
	if !s.framed && s.started {
		s.emit(s.pending)
		s.pending = s.pending[:0]
		return len(p), nil
	}
	end := []byte("\n" + s.mark + " ")
	if i := bytes.Index(s.pending, end); i >= 0 {
		s.emit(s.pending[:i])
		s.inTrailer = true
		s.trailer = append([]byte(nil), s.pending[i+len(end):]...)
		s.pending = nil
		return len(p), nil
	}
	keep := min(len(s.pending), len(end)-1)
	for keep > 0 && !bytes.HasPrefix(end, s.pending[len(s.pending)-keep:]) {
		keep--
	}
	s.emit(s.pending[:len(s.pending)-keep])
	s.pending = append([]byte(nil), s.pending[len(s.pending)-keep:]...)
	return len(p), nil
}

func (s *execStream) emit(b []byte) {
	if s.out != nil && len(b) > 0 {
		_, _ = s.out.Write(b)
	}
}

// flush ends the stream: the trailer's first line is the outcome, the rest
// standard error; without a trailer, what was held back is output.
func (s *execStream) flush() {
	if !s.inTrailer {
		s.emit(s.pending)
		s.pending = nil
		return
	}
	line, rest, _ := bytes.Cut(s.trailer, []byte("\n"))
	s.trailerLine, s.trailer = string(line), rest
}
