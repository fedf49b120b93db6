// Package swarm is ext.swarm: a sandbox is a compose file deployed as a
// Docker Swarm stack through a swarm manager reached as an ordinary host
// block. The repo is copied into an isolated workspace on the manager, as
// for ext.compose-ssh, and `docker stack deploy` runs it under the stack
// name sbx-<id>; swarm places its tasks on the nodes.
package swarm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/composefile"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// Name is the extension's catalog name.
const Name = "ext.swarm"

// stackLabel is the label `docker stack deploy` puts on the services,
// networks, secrets, configs and volumes of a stack.
const stackLabel = "com.docker.stack.namespace"

// Extension implements backends.Extension.
type Extension struct {
	// PollInterval is the longest wait between two looks at the services.
	PollInterval time.Duration
}

var (
	_ backends.Extension   = (*Extension)(nil)
	_ backends.Planner     = (*Extension)(nil)
	_ backends.Snapshotter = (*Extension)(nil)
)

// New returns the extension.
func New() *Extension { return &Extension{PollInterval: time.Second} }

func (e *Extension) Name() string { return Name }

// StackName is the stack of a sandbox: unique per sandbox, named as a
// compose sandbox's project is.
func StackName(id string) string { return "sbx-" + id }

func (e *Extension) Validate(_ *catalog.Profile, inputs map[string]string) error {
	_, err := composefile.Find(inputs)
	return err
}

// Plan loads the compose file as compose-go resolves it and refuses what
// `docker stack deploy` ignores or rejects, so the plan says it rather than
// a stack that runs differently from its file.
func (e *Extension) Plan(_ *catalog.Profile, inputs, env map[string]string, opts backends.PlanOptions) (backends.Plan, error) {
	l, err := composefile.Load(inputs, env)
	if err != nil {
		return backends.Plan{}, err
	}
	return check(l, opts.PublishedPorts != backends.PortsAsWritten, opts.Rules)
}

// stackKeys and serviceKeys (v3keys.go) are what docker stack deploy
// accepts: it validates the file against compose file format 3 and refuses
// any other key (x- extensions aside), where compose itself accepts the
// newer specification.
func keySet(words string) map[string]bool {
	set := map[string]bool{}
	for _, w := range strings.Fields(words) {
		set[w] = true
	}
	return set
}

func check(l *composefile.Loaded, freePorts bool, rules backends.Rules) (backends.Plan, error) {
	p := l.Project
	var plan backends.Plan
	// The host's policy and limits, as on a compose host: keys stack
	// deploy refuses are reported below on their own.
	errs := l.CheckPolicy(rules.Policy, l.Repo, true)
	errs = append(errs, l.CheckLimits(rules)...)
	for _, k := range l.Keys() {
		if !stackKeys[k.Name] && !strings.HasPrefix(k.Name, "x-") {
			errs = append(errs, &composefile.FileError{File: l.Path, Line: k.Line,
				Msg: fmt.Sprintf("top-level %q: docker stack deploy reads compose file format 3, which has no such key; remove it", k.Name)})
		}
	}
	// Every service as written, also one a profile disables: stack deploy
	// knows no profiles and validates them all.
	for _, svc := range l.Keys("services") {
		name := svc.Name
		for _, k := range l.Keys("services", name) {
			if !serviceKeys[k.Name] && !strings.HasPrefix(k.Name, "x-") {
				errs = append(errs, &composefile.FileError{File: l.Path, Line: k.Line,
					Msg: fmt.Sprintf("service %q sets %s: docker stack deploy reads compose file format 3, which has no such key; remove it", name, k.Name)})
			}
		}
		if l.IsMapping("services", name, "depends_on") {
			errs = append(errs, l.Errorf([]string{"services", name, "depends_on"},
				"service %q lists depends_on with conditions: swarm starts services in no order and takes only a list of names "+
					"(depends_on: [a, b]); make the service retry until its dependencies answer", name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.Services)) {
		svc := p.Services[name]
		plan.Services = append(plan.Services, name)
		switch {
		case svc.Build != nil && svc.Image == "":
			errs = append(errs, l.Errorf([]string{"services", name, "build"},
				"service %q has build and no image: swarm does not build images; build and push the image (or load it on every node) and name it in image:", name))
		case svc.Build != nil:
			plan.Warnings = append(plan.Warnings, backends.Finding{Summary: "Swarm Does Not Build Images", Detail: fmt.Sprintf("%s: service %q has build: swarm does not build it, the nodes run image %q as they find it",
				l.Ref("services", name, "build"), name, svc.Image)})
		case svc.Image == "":
			errs = append(errs, l.Errorf([]string{"services", name}, "service %q has no image", name))
		}
		if svc.ContainerName != "" {
			errs = append(errs, l.Errorf([]string{"services", name, "container_name"},
				"service %q sets container_name: swarm names its tasks' containers itself; remove it", name))
		}
		if d := svc.Deploy; d != nil && strings.HasSuffix(d.Mode, "-job") {
			errs = append(errs, l.Errorf([]string{"services", name, "deploy", "mode"},
				"service %q is a %s: a job completes and stops, and a sandbox is ready only while its services run; run it as a step of the pipeline instead", name, d.Mode))
		}
		for _, port := range svc.Ports {
			switch {
			case port.Published == "":
			case freePorts && !l.PortsFromExtends(name):
				plan.Warnings = append(plan.Warnings, backends.Finding{Summary: "Published Ports Get Free Host Ports", Detail: fmt.Sprintf("%s: service %q publishes %s:%d: "+
					"each sandbox gets a free port of the swarm's own range for it instead, on every node, found in endpoints[%q]",
					l.Ref("services", name, "ports"), name, port.Published, port.Target, backends.EndpointKey(name, int(port.Target), port.Protocol))})
			default:
				plan.Warnings = append(plan.Warnings, backends.Finding{Summary: "Port Published on Every Swarm Node", Detail: fmt.Sprintf("%s: service %q publishes port %s on every node of the swarm (ingress): "+
					"a second sandbox of this stack cannot deploy while this one runs", l.Ref("services", name, "ports"), name, port.Published)})
			}
		}
		for _, v := range svc.Volumes {
			switch {
			case v.Type == types.VolumeTypeBind:
				plan.Warnings = append(plan.Warnings, backends.Finding{Summary: "Bind Mount Read on the Task's Node", Detail: fmt.Sprintf("%s: service %q bind-mounts %s: the path is read on whichever node runs the task, "+
					"not from the workspace", l.Ref("services", name, "volumes"), name, v.Source)})
			case v.Type == types.VolumeTypeVolume && v.Source != "" && pinnedNode(svc.Deploy) == "":
				plan.Warnings = append(plan.Warnings, backends.Finding{Summary: "Swarm Volume Not Pinned to a Node", Detail: fmt.Sprintf("%s: service %q mounts volume %q but is not pinned to a node: each node that runs "+
					"one of its tasks gets a volume of its own, and only the manager's is removed with the sandbox; pin it "+
					"(deploy.placement.constraints: [node.hostname == NAME])", l.Ref("services", name, "volumes"), name, v.Source)})
			}
		}
	}
	if len(plan.Services) == 0 {
		errs = append(errs, l.Errorf(nil, "no service would start: every service is disabled by a profile, or none is declared"))
	}
	return plan, errors.Join(errs...)
}

// declaredReplicas are the replicas the compose file declares for each
// replicated service, as `docker stack deploy` asks swarm for them
// (deploy.replicas, 1 when unset). A global service is left out and keeps
// being compared with the engine's desired count: swarm runs one of its
// tasks per node its placement admits, a number only the swarm knows, and
// `docker service scale` refuses a global service, so that count cannot
// drift from the file the way a replicated service's can.
func declaredReplicas(p *types.Project) map[string]int {
	m := map[string]int{}
	for name, svc := range p.Services {
		d := svc.Deploy
		if d != nil && d.Mode != "" && d.Mode != "replicated" {
			continue // global (jobs are refused by check)
		}
		m[name] = 1
		if d != nil && d.Replicas != nil {
			m[name] = *d.Replicas
		}
	}
	return m
}

// pinRule matches a placement constraint naming one node.
var pinRule = regexp.MustCompile(`(?i)^\s*node\.(hostname|id)\s*==\s*(\S+)\s*$`)

// pinnedNode is the node a service's placement constraints pin it to ("").
func pinnedNode(d *types.DeployConfig) string {
	if d == nil || d.Placement.Constraints == nil {
		return ""
	}
	return pinnedBy(d.Placement.Constraints)
}

func pinnedBy(constraints []string) string {
	for _, c := range constraints {
		if m := pinRule.FindStringSubmatch(c); m != nil {
			return m[2]
		}
	}
	return ""
}

// deployScript deploys (or updates) the stack from the workspace. `docker
// stack deploy` reads no .env file: the workspace's is exported first, as
// compose would read it for interpolation (NAME=value lines, an optional
// `export `, quotes around the value, CRLF endings), other lines skipped;
// names that would redirect the docker CLI itself (DOCKER_*, PATH, HOME)
// are not exported. --resolve-image never: images come from the nodes (or
// the registry their daemons use), not from a digest lookup here.
func deployScript(sb *backends.Sandbox) string {
	// --detach (CLI >= 26) keeps the command from waiting for the tasks;
	// WaitReady does, with the sandbox's timeout. Older CLIs do not wait.
	return "cd -- " + hosts.Quote(sb.WorkspaceDir) + " || exit 1\n" + dotEnvExport +
		"detach=; if docker stack deploy --help 2>/dev/null | grep -q -e '--detach'; then detach=--detach=true; fi\n" +
		hosts.Command("docker", "stack", "deploy", "--compose-file", backends.ComposeFileOf(sb), "--with-registry-auth=false",
			"--prune", "--resolve-image", "never") + " $detach " + hosts.Quote(StackName(sb.ID)) + " >/dev/null\n"
}

const dotEnvExport = `if [ -f .env ]; then
	cr=$(printf '\r')
	while IFS= read -r line || [ -n "$line" ]; do
		line=${line%"$cr"}
		line=${line#export }
		case $line in DOCKER_*=* | PATH=* | HOME=*) continue ;; [A-Za-z_]*=*) ;; *) continue ;; esac
		name=${line%%=*}
		case $name in *[!A-Za-z0-9_]*) continue ;; esac
		value=${line#*=}
		case $value in \"*\") value=${value#\"}; value=${value%\"} ;; \'*\') value=${value#\'}; value=${value%\'} ;; esac
		export "$name=$value"
	done < .env
fi
`

func (e *Extension) Prepare(ctx context.Context, req backends.Request) (*backends.Sandbox, []backends.Step, error) {
	// A restore without a repo finds its compose file in the restored workspace.
	fromSnapshot := req.Fill != nil && req.Inputs["repo"] == ""
	file := req.Inputs["compose_file"]
	var plan backends.Plan
	var replicas map[string]int
	var rendered []byte
	var total backends.Limits
	freePorts := req.PublishedPorts != backends.PortsAsWritten
	if !fromSnapshot {
		l, err := composefile.Load(req.Inputs, req.Env)
		if err != nil {
			return nil, nil, err
		}
		if plan, err = check(l, freePorts, req.Rules); err != nil {
			return nil, nil, err
		}
		replicas = declaredReplicas(l.Project)
		total = l.Total(req.Rules)
		// Published ports without a host port get one from the swarm's
		// own range (30000-32767) on every node; fixed names are scoped.
		if rendered, err = l.Isolate(composefile.IsolateOptions{Project: StackName(req.ID), FreePorts: freePorts, Rules: req.Rules, DeployLimits: true}); err != nil {
			return nil, nil, err
		}
		if file, err = composefile.Find(req.Inputs); err != nil {
			return nil, nil, err
		}
	}
	ws, err := backends.WorkspaceDir(ctx, req.Host, req.Host.RootDir, req.ID)
	if err != nil {
		return nil, nil, err
	}
	sb := &backends.Sandbox{WorkspaceDir: ws, ComposeProject: StackName(req.ID), ComposeFile: file,
		Services: plan.Services, Replicas: replicas, Rendered: rendered != nil, PublishedPorts: backends.PortsFree}
	if !freePorts {
		sb.PublishedPorts = backends.PortsAsWritten
	}
	if !fromSnapshot {
		sb.SetRules(req.Rules, total)
	}
	var steps []backends.Step
	if fromSnapshot {
		steps = append(steps, backends.Step{Name: "find the restored compose file", Run: func(ctx context.Context) error {
			_, err := backends.RestoredComposeFile(ctx, req.Host, sb, file, nil)
			return err
		}})
	}
	if rendered != nil {
		steps = append(steps, backends.Step{Name: "write the rendered compose file", Timing: backends.TimingRender, Run: func(ctx context.Context) error {
			return hosts.WriteFile(ctx, req.Host, sb.WorkspaceDir+"/"+backends.RenderedFile(sb.ComposeFile), rendered, 0o644)
		}})
	}
	steps = append(steps, backends.Step{Name: "docker stack deploy", Timing: backends.TimingUp, Run: func(ctx context.Context) error {
		if err := req.Host.Run(ctx, deployScript(sb), nil, nil); err != nil {
			return fmt.Errorf("docker stack deploy failed: %w", err)
		}
		return nil
	}})
	if fromSnapshot {
		steps = append(steps, backends.Step{Name: "read the deployed services", Run: func(ctx context.Context) error {
			// The services and their declared replicas come from what the
			// manager deployed: the compose file is the restored
			// workspace's, on the host only, and the services `docker
			// stack deploy` has just made hold the replicas it declares
			// (nothing can have scaled them yet).
			out, err := hosts.Output(ctx, req.Host, deployedServicesScript(sb.ComposeProject))
			if err != nil {
				return fmt.Errorf("unable to list the services of stack %s: %w", sb.ComposeProject, err)
			}
			if sb.Services, sb.Replicas = parseDeployed(string(out), sb.ComposeProject); len(sb.Services) == 0 {
				return fmt.Errorf("stack %s was deployed from the restored %s, but the manager lists none of its services", sb.ComposeProject, sb.ComposeFile)
			}
			return nil
		}})
	}
	return sb, steps, nil
}

// deployedServicesScript prints each service of stack as name|replicas,
// the replicas empty for a global service.
func deployedServicesScript(stack string) string {
	return fmt.Sprintf(`ids=$(docker service ls -q --filter %s) || exit 1
[ -z "$ids" ] || docker service inspect --format '{{.Spec.Name}}|{{if .Spec.Mode.Replicated}}{{.Spec.Mode.Replicated.Replicas}}{{end}}' $ids
`, hosts.Quote("label="+stackLabel+"="+stack))
}

// parseDeployed reads deployedServicesScript's lines: the services
// (sorted) and the replicas of the replicated ones.
func parseDeployed(out, stack string) ([]string, map[string]int) {
	var services []string
	replicas := map[string]int{}
	for line := range strings.Lines(out) {
		name, n, ok := strings.Cut(strings.TrimSpace(line), "|")
		if name, ok2 := strings.CutPrefix(name, stack+"_"); ok && ok2 && name != "" {
			services = append(services, name)
			if r, err := strconv.Atoi(n); err == nil {
				replicas[name] = r
			}
		}
	}
	slices.Sort(services)
	return services, replicas
}

// WaitReady looks at the services until every one has the replicas its
// compose file declares running (swarm counts a task with a healthcheck as
// running once healthy), at growing intervals from 50 ms up to
// PollInterval.
func (e *Extension) WaitReady(ctx context.Context, h *hosts.Host, sb *backends.Sandbox) (backends.Status, error) {
	wait := 50 * time.Millisecond
	for {
		st, err := e.Inspect(ctx, h, sb)
		if err != nil {
			return backends.Status{}, err
		}
		if st.State == backends.StatusReady {
			return st, nil
		}
		select {
		case <-ctx.Done():
			// The tasks' own errors say why (no such image on a node, no
			// node matching a constraint).
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
			why, _ := hosts.Output(dctx, h, hosts.Command("docker", "stack", "ps", "--no-trunc",
				"--filter", "desired-state=running", "--format", "{{.Name}} on {{.Node}}: {{.CurrentState}} {{.Error}}", sb.ComposeProject))
			cancel()
			return backends.Status{}, fmt.Errorf("sandbox %s was not ready in time (services: %s; tasks:\n%s): %w", sb.ID, backends.Describe(st.Services), strings.TrimSpace(string(why)), ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, max(e.PollInterval, 50*time.Millisecond))
	}
}

func (e *Extension) Inspect(ctx context.Context, h *hosts.Host, sb *backends.Sandbox) (backends.Status, error) {
	out, err := hosts.Output(ctx, h, fmt.Sprintf("if test -d %s; then echo workspace; fi; %s", hosts.Quote(sb.WorkspaceDir), servicesScript(sb)))
	if err != nil {
		return backends.Status{}, fmt.Errorf("unable to list the services of sandbox %s: %w", sb.ID, err)
	}
	workspace, rest, _ := strings.Cut(string(out), "\n")
	if workspace != "workspace" {
		rest = string(out)
	}
	return status(workspace == "workspace", parseServices(rest, sb.ComposeProject), sb.Services, sb.Replicas), nil
}

// servicesScript prints what parseServices reads: each service of the
// stack with its replicas as `docker service ls` shows them, and, when there
// are services, their ids, the nodes with their status and the tasks meant
// to run with their node and state. The engine's own count of running
// replicas keeps counting a task on a node that went down (its last report
// said running), so parseServices counts the tasks itself.
func servicesScript(sb *backends.Sandbox) string {
	return fmt.Sprintf(`f=%s
svc=$(docker service ls --filter "$f" --format 'service|{{.Name}}|{{.Replicas}}') || exit 1
[ -n "$svc" ] || exit 0
echo "$svc"
ids=$(docker service ls -q --filter "$f") || exit 1
docker service inspect --format 'id|{{.ID}}|{{.Spec.Name}}|{{range .Endpoint.Ports}}{{.TargetPort}}/{{.Protocol}}={{.PublishedPort}} {{end}}' $ids || exit 1
docker node ls --format 'node|{{.ID}}|{{.Status}}' || exit 1
tasks=$(docker service ps -q --no-trunc --filter desired-state=running $ids) || exit 1
# A task replaced between the listing and here is left out: counted again
# at the next look.
[ -z "$tasks" ] || docker inspect --type task --format 'task|{{.ServiceID}}|{{.NodeID}}|{{.Status.State}}' $tasks 2>/dev/null || true
`, hosts.Quote("label="+stackLabel+"="+StackName(sb.ID)))
}

type service struct {
	name             string
	running, desired int
	ports            []backends.Port // published on every node (ingress)
}

// parseServices reads servicesScript's lines. A service's desired count is
// the second number of its replicas ("2/2", "1/3 (max 1 per node)", "0/1
// (1/1 completed)" for a job), what status compares with when the record
// declares no replicas for it; it runs the tasks in state running on a
// node that is ready.
func parseServices(out, stack string) []service {
	var list []service
	ids := map[string]string{}  // service id -> name
	ready := map[string]bool{}  // node id -> ready
	running := map[string]int{} // service name -> running tasks
	ports := map[string][]backends.Port{}
	var tasks [][]string
	for line := range strings.Lines(out) {
		f := strings.Split(strings.TrimSpace(line), "|")
		switch {
		case f[0] == "service" && len(f) == 3:
			name, ok := strings.CutPrefix(f[1], stack+"_")
			counts, _, _ := strings.Cut(f[2], " ")
			_, d, ok2 := strings.Cut(counts, "/")
			desired, err := strconv.Atoi(d)
			if ok && ok2 && err == nil {
				list = append(list, service{name: name, desired: desired})
			}
		case f[0] == "id" && len(f) >= 3:
			ids[f[1]] = strings.TrimPrefix(f[2], stack+"_")
			if len(f) == 4 {
				ports[ids[f[1]]] = parseIngressPorts(f[3])
			}
		case f[0] == "node" && len(f) == 3:
			ready[f[1]] = f[2] == "Ready"
		case f[0] == "task" && len(f) == 4:
			tasks = append(tasks, f)
		}
	}
	for _, t := range tasks {
		if t[3] == "running" && ready[t[2]] {
			running[ids[t[1]]]++
		}
	}
	for i := range list {
		list[i].running = running[list[i].name]
		list[i].ports = ports[list[i].name]
	}
	return list
}

// parseIngressPorts reads a service's published ports as servicesScript
// prints them ("80/tcp=30000 53/udp=30001 "): the swarm publishes each on
// every node's interfaces.
func parseIngressPorts(s string) []backends.Port {
	var out []backends.Port
	for _, p := range strings.Fields(s) {
		target, published, ok := strings.Cut(p, "=")
		t, proto, _ := strings.Cut(target, "/")
		tn, err1 := strconv.Atoi(t)
		pn, err2 := strconv.Atoi(published)
		if ok && err1 == nil && err2 == nil && pn > 0 {
			out = append(out, backends.Port{Target: tn, Protocol: proto, HostIP: "0.0.0.0", Published: pn})
		}
	}
	slices.SortFunc(out, func(a, b backends.Port) int {
		return cmp.Or(cmp.Compare(a.Target, b.Target), cmp.Compare(a.Protocol, b.Protocol))
	})
	return out
}

// Service states in Status.Services.
const (
	stateRunning = "running" // every declared replica runs
	statePartial = "partial" // some replicas run, fewer than declared
	stateStopped = "stopped" // none runs
	stateMissing = "missing" // no such service in the stack
)

// status is the sandbox's state from its services: ready when every
// declared service runs the replicas its compose file declares (replicas;
// a service it does not name, the engine's desired count), degraded when
// one falls below, stopped when none runs. The engine's desired count is
// not the measure where the file's is known: `docker service scale
// web=0` lowers it, and the stack would still look as asked while it no
// longer runs what the configuration says. More replicas than declared
// count as running: nothing the file asks for is missing.
func status(workspace bool, seen []service, declared []string, replicas map[string]int) backends.Status {
	byName := map[string]service{}
	for _, s := range seen {
		byName[s.name] = s
	}
	st := backends.Status{}
	ready, up := 0, 0
	for _, name := range declared {
		s, ok := byName[name]
		want := s.desired
		if n, known := replicas[name]; known {
			want = n
		}
		state := stateMissing
		switch {
		case !ok:
		case s.running >= want: // a service that declares 0 replicas is as asked
			state = stateRunning
			ready++
			up++
		case s.running > 0:
			state = statePartial
			up++
		default:
			state = stateStopped
		}
		st.Services = append(st.Services, backends.ServiceState{Name: name, State: state, Ports: s.ports})
	}
	st.State = backends.SandboxState(workspace, len(declared), ready, up)
	return st
}

// removeStackScript removes the stack's services, networks, secrets and
// configs and waits, for at most wait (in whole seconds), until the
// manager lists none of them and no task of the stack on any node that is
// Ready, and no container of the stack is left on the manager's node
// (those still there once the tasks are gone are removed); with volumes,
// then the stack's volumes on the manager's node too (also those a
// restore made under the compose project label). `docker stack rm` is
// repeated every second: a network whose tasks were still detaching is
// refused at first. Past wait it fails naming what remains. An engine
// that does not answer fails the script, so the record and workspace that
// name what to remove stay.
//
// Why the tasks, and not the networks, end the wait. After `docker stack
// rm` each node's agent stops its tasks' containers and reports them shut
// down; the manager deletes a task once its node reported it so, and only
// then does that node's agent remove the stopped container. A network
// leaving the manager's list says less: the manager drops it by its own
// account of the tasks, not the nodes' (on the three-node harness it went
// while the manager still listed tasks on it as running). A task the
// manager no longer lists on a Ready node is one whose container has
// stopped there and which that node's agent has been told to remove. The
// removal itself, on a node other than the manager's, is out of the
// manager's sight: it comes after the task is deleted (the engine's task
// controller first waits ~2 s for the network's gossip), is reported to
// nobody, and the manager's API has no view of another node's containers;
// on the manager's own node the script removes them. Tasks on a node that
// is not Ready (down, lost) are not waited for: the manager keeps them,
// meant to be removed, and that node's agent stops and removes them when
// it comes back.
func removeStackScript(stack string, volumes bool, wait time.Duration) string {
	done, withvols := "exit 0", "''"
	if volumes {
		withvols = "1"
		done = `vols=$(docker volume ls -q --filter "$f" && docker volume ls -q --filter "$fc") || unanswered
		if [ -z "$vols" ]; then exit 0; fi
		docker volume rm -f $vols >/dev/null 2>&1`
	}
	return fmt.Sprintf(`unanswered() { echo "the swarm manager did not answer: what the stack made may remain" >&2; exit 1; }
f=%[1]s fc=%[2]s withvols=%[6]s vols=
end=$(( $(date +%%s) + %[5]d ))
# A host that left the swarm took the stack's services and networks with
# it: what remains of the stack here is containers and volumes. A worker
# cannot remove a stack: say so rather than wait.
node=$(docker info --format '{{.Swarm.LocalNodeState}} {{.Swarm.ControlAvailable}}') || unanswered
case $node in
"active true") ;;
inactive*)
	ids=$(docker ps -aq --filter "$f") || unanswered
	[ -z "$ids" ] || docker rm -f -v $ids >/dev/null || exit 1
	if [ -n "$withvols" ]; then
		ids=$(docker volume ls -q --filter "$f" && docker volume ls -q --filter "$fc") || unanswered
		[ -z "$ids" ] || docker volume rm -f $ids >/dev/null || exit 1
	fi
	exit 0 ;;
*) echo "this host is not a manager of its swarm (node state: $node): the stack can be removed only through a manager" >&2; exit 1 ;;
esac
i=0
while :; do
	objects=$(docker service ls --filter "$f" --format 'service {{.Name}}' &&
		docker network ls --filter "$f" --format 'network {{.Name}}' &&
		docker secret ls --filter "$f" --format 'secret {{.Name}}' &&
		docker config ls --filter "$f" --format 'config {{.Name}}') || unanswered
	nodes=$(docker node ls --format '{{.ID}} {{.Status}}') || unanswered
	ready=$(echo "$nodes" | while read -r id state; do if [ "$state" = Ready ]; then echo "$id"; fi; done)
	tasks=
	# A node that left between the two listings fails node ps: the next
	# look lists again. (A task of a removed service is named after the
	# service's id: its image says more.)
	if [ -n "$ready" ]; then
		tasks=$(docker node ps --filter "$f" --format 'task {{.Name}} ({{.Image}}) on {{.Node}}: {{.CurrentState}}' $ready) ||
			tasks="tasks (the manager did not list them)"
	fi
	containers=$(docker ps -aq --filter "$f") || unanswered
	if [ -z "$objects$tasks$containers" ]; then
		%[4]s
	elif [ -z "$objects$tasks" ]; then
		docker rm -f -v $containers >/dev/null 2>&1
	elif [ -n "$objects" ] && [ $((i %% 10)) -eq 0 ]; then
		docker stack rm %[3]s >/dev/null 2>&1
	fi
	i=$((i+1))
	if [ "$(date +%%s)" -ge "$end" ]; then
		# node ps of several nodes may list a task twice.
		left=$(printf '%%s\n' "$objects" "$(printf '%%s\n' "$tasks" | sort -u)" ${containers:+"containers on the manager's node: $(echo $containers)"} ${vols:+"volumes: $(echo $vols)"} | grep . | tr '\n' ';')
		echo "resources of stack "%[3]s" remain: ${left%%;}" >&2; exit 1
	fi
	sleep 0.1
done
`, hosts.Quote("label="+stackLabel+"="+stack), hosts.Quote("label=com.docker.compose.project="+stack), hosts.Quote(stack), done, int(wait.Seconds()), withvols)
}

// removeWait bounds removeStackScript: within the two minutes a cleanup
// after a failed create has, so the script says what remains.
const removeWait = 100 * time.Second

// removeWaitFor is how long removeStackScript may wait within ctx: at most
// removeWait, and short of ctx's deadline by a margin for the command's
// round trip and what follows it, so that a removal the deadline cuts
// short still ends with the script naming what remains rather than with
// the session cancelled.
func removeWaitFor(ctx context.Context) time.Duration {
	wait := removeWait
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl)-removeMargin)
	}
	return max(wait, time.Second)
}

const removeMargin = 10 * time.Second

// Teardown removes the stack (services, networks, the manager node's
// volumes) and waits until they are gone and no task of it remains on any
// node that is Ready (removeStackScript says what the manager can and
// cannot see of the nodes), then the workspace. Already gone is success.
// The stack is named after the id, never after what a record says.
func (e *Extension) Teardown(ctx context.Context, h *hosts.Host, sb *backends.Sandbox) error {
	if err := h.Run(ctx, removeStackScript(StackName(sb.ID), true, removeWaitFor(ctx)), nil, nil); err != nil {
		return fmt.Errorf("unable to remove the services, networks and volumes of sandbox %s: %w", sb.ID, err)
	}
	return backends.RemoveWorkspace(ctx, h, sb.WorkspaceDir, sb.ID)
}

// Pause is refused: swarm has no pause, and the tasks' engines are on
// other nodes. CheckSnapshot says so at plan time.
func (e *Extension) Pause(context.Context, *hosts.Host, *backends.Sandbox) error {
	return errPause
}

var errPause = errors.New(`swarm services cannot be paused: use quiesce = "stop" (the stack is removed and deployed again, volumes kept) or "none"`)

// Unpause has nothing to undo.
func (e *Extension) Unpause(context.Context, *hosts.Host, *backends.Sandbox) error { return nil }

// Stop removes the stack's services (volumes and workspace stay) and waits
// until their tasks are gone: swarm has no stop, and scaling to zero would
// not stop a global service.
func (e *Extension) Stop(ctx context.Context, h *hosts.Host, sb *backends.Sandbox) error {
	if err := h.Run(ctx, removeStackScript(StackName(sb.ID), false, removeWaitFor(ctx)), nil, nil); err != nil {
		return fmt.Errorf("unable to stop sandbox %s: %w", sb.ID, err)
	}
	return nil
}

// Start deploys the stack again from the (restored) workspace.
func (e *Extension) Start(ctx context.Context, h *hosts.Host, sb *backends.Sandbox) error {
	if err := h.Run(ctx, deployScript(sb), nil, nil); err != nil {
		return fmt.Errorf("unable to start sandbox %s: docker stack deploy: %w", sb.ID, err)
	}
	return nil
}

var _ backends.SnapshotChecker = (*Extension)(nil)

// CheckSnapshot allows a checkpoint of a swarm sandbox only when every
// service is pinned to one node (a placement constraint on node.hostname or
// node.id), as deployed: its tasks then stay where they are while the
// workspace is read and when it is restored. Volumes are not captured:
// they live on the nodes, out of the manager's reach.
func (e *Extension) CheckSnapshot(ctx context.Context, h *hosts.Host, sb *backends.Sandbox, quiesce string, volumes bool) error {
	if quiesce == backends.QuiescePause {
		return errPause
	}
	if volumes {
		return fmt.Errorf("sandbox %s is a swarm stack: its volumes live on the nodes that ran its tasks and are not captured; set include_volumes = false", sb.ID)
	}
	out, err := hosts.Output(ctx, h, fmt.Sprintf(`ids=$(docker service ls -q --filter %s) || exit 1
if [ -n "$ids" ]; then docker service inspect --format '{{.Spec.Name}}|{{join .Spec.TaskTemplate.Placement.Constraints ";"}}' $ids; fi`,
		hosts.Quote("label="+stackLabel+"="+StackName(sb.ID))))
	if err != nil {
		return fmt.Errorf("unable to read the placement of the services of sandbox %s: %w", sb.ID, err)
	}
	return checkPinned(string(out), sb)
}

// checkPinned reads CheckSnapshot's name|constraints lines.
func checkPinned(out string, sb *backends.Sandbox) error {
	var loose []string
	found := 0
	for line := range strings.Lines(out) {
		name, constraints, ok := strings.Cut(strings.TrimSpace(line), "|")
		if !ok {
			continue
		}
		found++
		if pinnedBy(strings.Split(constraints, ";")) == "" {
			loose = append(loose, strings.TrimPrefix(name, sb.ComposeProject+"_"))
		}
	}
	if found == 0 {
		return fmt.Errorf("sandbox %s has no services deployed: nothing to hold still while its workspace is read", sb.ID)
	}
	if len(loose) > 0 {
		slices.Sort(loose)
		return fmt.Errorf("snapshots of swarm sandbox %s need every service pinned to one node, and %s %s not "+
			"(add deploy.placement.constraints: [node.hostname == NAME] to the compose file): swarm could otherwise move a task "+
			"between the capture and a restore", sb.ID, strings.Join(loose, ", "), map[bool]string{true: "is", false: "are"}[len(loose) == 1])
	}
	return nil
}
