// Package composessh is ext.compose-ssh: a sandbox is a docker-compose stack
// in an isolated directory <root_dir>/<id> on a host, started under its own
// compose project so that sandboxes never share containers, networks or volumes.
package composessh

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/composefile"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// Name is the extension's catalog name.
const Name = "ext.compose-ssh"

// projectLabel is the label compose puts on everything it creates for a project.
const projectLabel = "com.docker.compose.project"

// Extension implements backends.Extension.
type Extension struct {
	// ComposeCommand is the provider's compose_command; empty means detect
	// per host: `docker compose`, then `docker-compose`, then `podman-compose`.
	ComposeCommand string
	// PollInterval is how often WaitReady looks at the services.
	PollInterval time.Duration
	// NetworkPools are the hosts' network_pool settings, by host name;
	// a host without one uses DefaultNetworkPool.
	NetworkPools map[string]netip.Prefix
	// NetworkOperations are the hosts' max_network_operations settings,
	// by host name; a host without one uses DefaultNetworkOperations.
	NetworkOperations map[string]int

	detections backends.Flight[string, []string]       // host name -> compose argv
	toCache    sync.Map                                // host name -> a detection for the host to keep (cacheDetectionScript)
	listings   backends.Flight[string, []netip.Prefix] // host name -> subnets in use there, as last listed
	looks      backends.Flight[string, struct{}]       // host name -> its first look (firstLook), done
	choosing   sync.Mutex                              // held while a create chooses subnets (claim)
	chosen     map[string][]netip.Prefix               // host name -> subnets this process chose there
	// firstStatus holds, by sandbox id, the status output read by the
	// command that brought the sandbox up, for WaitReady's first look.
	firstStatus sync.Map
}

var _ backends.Extension = (*Extension)(nil)

// New returns the extension using composeCommand ("" to auto-detect).
func New(composeCommand string) *Extension {
	return &Extension{ComposeCommand: composeCommand, PollInterval: time.Second, NetworkPools: map[string]netip.Prefix{},
		NetworkOperations: map[string]int{},
		detections:        backends.Flight[string, []string]{What: "compose command detection", Keep: backends.Forever},
		listings:          backends.Flight[string, []netip.Prefix]{What: "listing of the subnets in use", Keep: backends.Forever},
		looks:             backends.Flight[string, struct{}]{What: "first look at the host", Keep: backends.Forever},
		chosen:            map[string][]netip.Prefix{}}
}

func (e *Extension) Name() string { return Name }

// ProjectName is the compose project of a sandbox.
func ProjectName(id string) string { return "sbx-" + id }

func (e *Extension) Validate(p *catalog.Profile, inputs map[string]string) error {
	if canaryImage(p, inputs) != "" {
		return nil
	}
	_, err := composefile.Find(inputs)
	return err
}

// canaryImage is the profile's `image` setting when the sandbox brings no
// repo: the stack is then one generated service running that image.
func canaryImage(p *catalog.Profile, inputs map[string]string) string {
	if inputs["repo"] != "" || p == nil {
		return ""
	}
	return p.Settings["image"]
}

// canaryCompose is the generated stack: one long-running service with a
// healthcheck, so readiness is a real round trip through the engine.
func canaryCompose(image string) []byte {
	return []byte(fmt.Sprintf(`services:
  canary:
    image: %q
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
    healthcheck:
      test: ["CMD", "true"]
      interval: 1s
      retries: 3
`, image))
}

// projectOnHost is the project of the compose file a restored workspace
// holds, as the host's compose resolves it (sb.ComposeFile is set to it).
// The restored file is checked by rules: a sandbox's own services may
// have rewritten the compose file that a snapshot captured.
func (e *Extension) projectOnHost(ctx context.Context, h *hosts.Host, sb *backends.Sandbox, compose []string, name string, rules backends.Rules) (stack, error) {
	out, err := backends.RestoredComposeFile(ctx, h, sb, name, func(file string) string {
		// The file as restored, alone: the rendering comes from it, and the
		// network override is added to the rendering when compose runs it.
		try := *sb
		try.ComposeFile, try.Rendered, try.NetworkOverride = file, false, false
		return inWorkspace(&try, compose, "config")
	})
	if err != nil {
		return stack{}, err
	}
	st, err := projectFromHost(out)
	if err != nil {
		return stack{}, fmt.Errorf("compose file %s: reading the resolved project: %w", sb.ComposeFile, err)
	}
	errs := st.loaded.CheckPolicy(rules.Policy, sb.WorkspaceDir, false)
	if err := errors.Join(append(errs, st.loaded.CheckLimits(rules)...)...); err != nil {
		return stack{}, fmt.Errorf("the restored compose file %s breaks the host's rules:\n%w", sb.ComposeFile, err)
	}
	return st, nil
}

// maxRenderedInScript is the largest rendering carried in the command that
// runs `compose up` (a larger one is written as a file of its own first):
// a script reaches the host on a shell's or a session's input, never on a
// command line, but a shell reads it a byte at a time.
const maxRenderedInScript = 64 << 10

// writeRenderedScript writes the rendered compose file; its content is in
// the script itself (a few KiB), so the command that writes it is the one
// that runs `compose up`. Only for a rendering of the file as written,
// which holds no value of the .env (an interpolated one is written like
// the .env, 0600).
func writeRenderedScript(sb *backends.Sandbox, rendered []byte) string {
	file := hosts.Quote(sb.WorkspaceDir + "/" + backends.RenderedFile(sb.ComposeFile))
	return fmt.Sprintf("printf '%%s' %s > %s.tmp.$$ && mv -f -- %[2]s.tmp.$$ %[2]s || exit 1\n", hosts.Quote(string(rendered)), file)
}

// portsMode is a request's published_ports as recorded.
func portsMode(mode string) string {
	if mode == backends.PortsAsWritten {
		return mode
	}
	return backends.PortsFree
}

func (e *Extension) Prepare(ctx context.Context, req backends.Request) (*backends.Sandbox, []backends.Step, error) {
	// A restore without a repo finds its compose file in the restored workspace.
	fromSnapshot := req.Fill != nil && req.Inputs["repo"] == ""
	canary := canaryImage(req.Profile, req.Inputs)
	file := "compose.yaml"
	var err error
	if !fromSnapshot && canary == "" {
		if file, err = composefile.Find(req.Inputs); err != nil {
			return nil, nil, err
		}
	}
	// The services, known from the client's copy of the compose file: no
	// round trip, and the same list the plan showed.
	var st stack
	if !fromSnapshot {
		if st, err = e.load(req.Profile, req.Inputs, req.Env, backends.PlanOptions{PublishedPorts: req.PublishedPorts, Rules: req.Rules}); err != nil {
			return nil, nil, err
		}
	}
	e.firstLook(ctx, req.Host, !fromSnapshot && len(st.networks) > 0)
	compose, err := e.compose(ctx, req.Host)
	if err != nil {
		return nil, nil, err
	}
	ws, err := backends.WorkspaceDir(ctx, req.Host, req.Host.RootDir, req.ID)
	if err != nil {
		return nil, nil, err
	}
	sb := &backends.Sandbox{
		WorkspaceDir: ws, ComposeProject: ProjectName(req.ID), ComposeFile: file,
		PublishedPorts: portsMode(req.PublishedPorts), WaitForPorts: req.WaitForPorts,
		// Known before anything is made, so that a create cut off after
		// `compose up` leaves a record whose teardown reads the same file.
		Rendered:       st.loaded != nil || fromSnapshot,
		ComposeCommand: compose,
	}
	if fromSnapshot || len(st.networks) > 0 {
		e.prefetch(ctx, req.Host, engine(compose))
	}
	var steps []backends.Step
	if canary != "" && !fromSnapshot {
		steps = append(steps, backends.Step{Name: "write the canary compose file", Timing: backends.TimingRender, Run: func(ctx context.Context) error {
			return hosts.WriteFile(ctx, req.Host, ws+"/"+file, canaryCompose(canary), 0o644)
		}})
	}
	var rendered []byte
	render := func(ctx context.Context, pending *backends.Pending) (err error) {
		// A restore's workspace holds the snapshot's compose file (over the
		// repo's, when it has one): the stack is what the host resolves
		// from it, rendered from that, and written by a command of its own.
		var renderedOnHost bool
		if req.Fill != nil && canary == "" {
			if st, err = e.projectOnHost(ctx, req.Host, sb, compose, req.Inputs["compose_file"], req.Rules); err != nil {
				return err
			}
			sb.Rendered, renderedOnHost = true, true
		}
		sb.Services = st.plan.Services
		if st.loaded == nil {
			return nil
		}
		sb.OneShot = oneShot(st.loaded.Project)
		sb.SetRules(req.Rules, st.loaded.Total(req.Rules))
		if rendered, err = st.loaded.Isolate(composefile.IsolateOptions{Project: sb.ComposeProject,
			FreePorts: sb.PublishedPorts == backends.PortsFree, PublishAddress: req.Host.PublishAddress, Rules: req.Rules}); err != nil {
			return err
		}
		if renderedOnHost || len(rendered) > maxRenderedInScript {
			// `compose config` interpolates: the rendering may hold values
			// of the .env, so it is written like the .env (0600), by the
			// command that brings the stack up.
			data := rendered
			pending.Add("writing the rendered compose file", func(hosts.Mark) string {
				return hosts.WriteScript(sb.WorkspaceDir+"/"+backends.RenderedFile(sb.ComposeFile), data, 0o600)
			})
			rendered = nil
		}
		return nil
	}
	up := func(ctx context.Context, pending *backends.Pending) error {
		return e.up(ctx, req, sb, compose, st.networks, rendered, pending)
	}
	// The rendering reads and writes the workspace only: a restore's
	// volumes are filled meanwhile.
	return sb, append(steps, backends.Step{Name: "render the compose file", RunWith: render, WhileFilling: true, Timing: backends.TimingRender},
		backends.Step{Name: "compose up", RunWith: up, Timing: backends.TimingUp}), nil
}

// up reserves the subnets of the stack's networks, brings the stack up and
// takes the first look at its services for WaitReady, in one command.
// Reservations are per root directory, but docker's address space is the
// host's: another root (another user, another configuration) may create a
// network in a chosen subnet before this stack does. Docker refuses the
// overlap; then the subnets are chosen again, with that network now in the
// taken set. rendered, when set, is written by the same command.
func (e *Extension) up(ctx context.Context, req backends.Request, sb *backends.Sandbox, compose, networks []string, rendered []byte, pending *backends.Pending) error {
	for attempt := 1; ; attempt++ {
		res, err := e.chooseNetworks(ctx, req.Host, req.Profile, sb, engine(compose), networks, attempt > 1)
		if err != nil {
			return err
		}
		sb.NetworkOverride = res != nil
		// The first attempt runs what the create has pending (its record,
		// with what the steps learned, and its workspace) first.
		outcome := func(_ hosts.Reply, err error) error { return err }
		reply, err := hosts.AskTogether(ctx, req.Host, "compose up", req.Host.Path(backends.ScratchDir...), "bringing sandbox "+sb.ID+" up", func(m hosts.Mark) string {
			// Marked, so that a teardown ends it should it outlive its
			// connection (lateCommands).
			script := "export " + createMarker + "=" + sb.ID + "\n"
			var work string
			work, outcome = pending.Take(m)
			script += work
			script += e.cacheDetectionScript(req.Host)
			if res != nil {
				script += res.script(m)
			}
			if rendered != nil {
				script += writeRenderedScript(sb, rendered)
			}
			return script + e.slotted(req.Host, inWorkspace(sb, compose, "up", "-d", "--remove-orphans")) +
				settleThenStatus(ctx, m, sb, compose)
		})
		if err = outcome(reply, err); errors.Is(err, backends.ErrWorkspaceExists) {
			return err
		}
		if err == nil && reply.Result == "" {
			for _, s := range reply.Sections {
				if s.Kind == statusAfterUp {
					e.firstStatus.Store(sb.ID, string(s.Body))
				}
			}
			return nil
		}
		if err == nil && attempt < 5 { // reservedMeanwhile: nothing was written, nothing started
			continue
		} else if err == nil {
			return errors.New("other provider processes reserved the subnets chosen for the sandbox's networks first, five times")
		}
		var ce *hosts.CommandError
		if !errors.As(err, &ce) || !strings.Contains(ce.Stderr, "Pool overlaps") || attempt == 5 {
			return fmt.Errorf("compose up failed: %w", err)
		}
		if derr := req.Host.Run(ctx, e.slotted(req.Host, inWorkspace(sb, compose, "down", "--remove-orphans", "--timeout", "5"))+
			"rm -f -- "+hosts.Quote(overrideFor(sb)), nil, nil); derr != nil {
			return fmt.Errorf("compose up failed: %w; undoing it to choose other subnets failed: %v", err, derr)
		}
	}
}

func (e *Extension) Inspect(ctx context.Context, h *hosts.Host, sb *backends.Sandbox) (backends.Status, error) {
	compose, err := e.compose(ctx, h)
	if err != nil {
		return backends.Status{}, err
	}
	return e.status(ctx, h, sb, compose)
}

// status reads the workspace's presence and every container of the project
// in one command.
func (e *Extension) status(ctx context.Context, h *hosts.Host, sb *backends.Sandbox, compose []string) (backends.Status, error) {
	out, err := hosts.Output(ctx, h, statusScript(sb, compose))
	if err != nil {
		return backends.Status{}, fmt.Errorf("unable to list the containers of sandbox %s: %w", sb.ID, err)
	}
	return parseStatus(string(out), sb), nil
}

// statusScript prints what parseStatus reads: "workspace" when the
// workspace exists, then service|state|status|ports of each of its
// containers. The published ports come with the state: a sandbox's
// endpoints cost no command of their own.
func statusScript(sb *backends.Sandbox, compose []string) string {
	return fmt.Sprintf(`if test -d %s; then echo workspace; fi; %s ps -a --filter %s --format %s`,
		hosts.Quote(sb.WorkspaceDir), engine(compose), hosts.Quote("label="+projectLabel+"="+sb.ComposeProject), hosts.Quote(containerFormat))
}

// containerFormat is a container's line in a status: its service, state,
// status and published ports.
const containerFormat = `{{.Label "com.docker.compose.service"}}|{{.State}}|{{.Status}}|{{.Ports}}`

var _ backends.BatchInspector = (*Extension)(nil)

// HostStatusScript lists every compose container on the host with its
// project: the status of all of a host's sandboxes in one command.
//
// A status needs only the engine, not the compose command: when this
// process has not detected that yet (a plan's refresh) and is not at it,
// the script lists the containers of each engine the host has rather than
// detecting it, which runs the compose CLI (`docker compose version`
// starts the compose plugin: ~0.3 s, the most of a plan's time on the
// host). Project names are the sandboxes' own, so a project is found in
// one engine or, where `docker` is podman's, seen twice the same. An
// engine whose listing fails, or no engine at all, fails the script: each
// sandbox is then inspected by itself, which says why.
func (e *Extension) HostStatusScript(ctx context.Context, h *hosts.Host) (string, error) {
	filter := hosts.Quote("label=" + projectLabel)
	format := hosts.Quote(`{{.Label "` + projectLabel + `"}}|` + containerFormat)
	compose := strings.Fields(e.ComposeCommand)
	if len(compose) == 0 {
		compose, _, _ = e.detections.Peek(ctx, h.Host()) // empty unless detected
	}
	if len(compose) > 0 {
		return engine(compose) + " ps -a --filter " + filter + " --format " + format, nil
	}
	return `(n=0; for e in docker podman; do command -v "$e" >/dev/null 2>&1 || continue; "$e" ps -a --filter ` + filter +
		` --format ` + format + ` || exit 1; n=1; done; [ "$n" = 1 ])`, nil
}

// StatusFrom is Inspect's status of sb from HostStatusScript's output.
func (e *Extension) StatusFrom(out string, workspace bool, sb *backends.Sandbox) backends.Status {
	var own strings.Builder
	if workspace {
		own.WriteString("workspace\n")
	}
	prefix := sb.ComposeProject + "|"
	for line := range strings.Lines(out) {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			own.WriteString(rest)
		}
	}
	return parseStatus(own.String(), sb)
}

// parseStatus turns the status script's output into a Status of sb's
// declared services.
func parseStatus(out string, sb *backends.Sandbox) backends.Status {
	declared := sb.Services
	workspace := false
	seen := map[string]backends.ServiceState{}
	for _, line := range strings.Split(out, "\n") {
		if line == "workspace" {
			workspace = true
			continue
		}
		parts := strings.SplitN(line, "|", 4)
		if len(parts) < 3 || parts[0] == "" {
			continue
		}
		state := parts[1]
		switch {
		case state == "exited" && strings.HasPrefix(parts[2], "Exited (0)") && slices.Contains(sb.OneShot, parts[0]):
			state = backends.ServiceCompleted
		case state != "running":
		case strings.Contains(parts[2], "(health: starting)"):
			state = "starting"
		case strings.Contains(parts[2], "(unhealthy)"):
			state = "unhealthy"
		}
		s := seen[parts[0]]
		s.Name, s.State = parts[0], state
		if len(parts) == 4 {
			s.Ports = append(s.Ports, parsePorts(parts[3])...)
		}
		seen[parts[0]] = s
	}
	st := backends.Status{}
	ready, up := 0, 0
	for _, name := range declared {
		s, ok := seen[name]
		if !ok {
			s = backends.ServiceState{Name: name, State: "missing"}
		}
		s.Ports = tidyPorts(s.Ports)
		switch s.State {
		case "running":
			ready++
			up++
		case backends.ServiceCompleted:
			ready++
		case "starting", "unhealthy":
			up++
		}
		st.Services = append(st.Services, s)
	}
	st.State = backends.SandboxState(workspace, len(declared), ready, up)
	return st
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

var _ backends.Snapshotter = (*Extension)(nil)

// Pause freezes the stack's containers (compose pause) for a consistent capture.
func (e *Extension) Pause(ctx context.Context, h *hosts.Host, sb *backends.Sandbox) error {
	return e.composeRun(ctx, h, sb, "unable to pause", "pause")
}

func (e *Extension) Unpause(ctx context.Context, h *hosts.Host, sb *backends.Sandbox) error {
	return e.composeRun(ctx, h, sb, "unable to unpause", "unpause")
}

// stopArgs are `compose stop`'s: the same for a restore and a stop in place.
var stopArgs = []string{"stop", "--timeout", "10"}

// Stop stops the stack's containers around an in-place restore.
func (e *Extension) Stop(ctx context.Context, h *hosts.Host, sb *backends.Sandbox) error {
	return e.composeRun(ctx, h, sb, "unable to stop", stopArgs...)
}

// Start brings the stack up from the (restored) workspace: `up`, not
// `start`, so a restored compose file or .env takes effect; a rendered
// sandbox's file is rendered again from the compose file the workspace
// holds now.
func (e *Extension) Start(ctx context.Context, h *hosts.Host, sb *backends.Sandbox) error {
	if sb.Rendered {
		compose, err := e.compose(ctx, h)
		if err != nil {
			return err
		}
		found := *sb
		st, err := e.projectOnHost(ctx, h, &found, compose, sb.ComposeFile, sb.RulesOrNone())
		if err != nil {
			return fmt.Errorf("unable to start sandbox %s: %w", sb.ID, err)
		}
		rendered, err := st.loaded.Isolate(composefile.IsolateOptions{Project: sb.ComposeProject,
			FreePorts: sb.PublishedPorts != backends.PortsAsWritten, PublishAddress: h.PublishAddress, Rules: sb.RulesOrNone()})
		if err != nil {
			return fmt.Errorf("unable to start sandbox %s: %w", sb.ID, err)
		}
		if err := hosts.WriteFile(ctx, h, sb.WorkspaceDir+"/"+backends.RenderedFile(sb.ComposeFile), rendered, 0o600); err != nil {
			return fmt.Errorf("unable to start sandbox %s: %w", sb.ID, err)
		}
	}
	// `up` makes the networks again when something removed them: it
	// holds one of the host's network slots.
	err := e.withCompose(ctx, h, sb, func(compose []string) error {
		return h.Run(ctx, e.slotted(h, inWorkspace(sb, compose, "up", "-d", "--remove-orphans")), nil, nil)
	})
	if err != nil {
		return fmt.Errorf("unable to start sandbox %s: %w", sb.ID, err)
	}
	return nil
}

// composeRun runs `compose ARGS` of sb (pause, unpause, and the stop and
// up around an in-place restore) with its recorded command (withCompose).
func (e *Extension) composeRun(ctx context.Context, h *hosts.Host, sb *backends.Sandbox, what string, args ...string) error {
	err := e.withCompose(ctx, h, sb, func(compose []string) error {
		return h.Run(ctx, inWorkspace(sb, compose, args...), nil, nil)
	})
	if err != nil {
		return fmt.Errorf("%s sandbox %s: %w", what, sb.ID, err)
	}
	return nil
}
