package composessh

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"
	units "github.com/docker/go-units"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/composefile"
)

// The compose file is read on the client at plan time (composefile): what
// it accepts tells the plan which services the sandbox will run, and the
// checks below what would break a sandbox's isolation.

// Plan loads the repo's compose project as compose would on the host and
// checks what would break a sandbox's isolation or cannot work on the host.
// env is what the workspace .env will hold; when empty the sandbox writes no
// .env and compose reads the repo's own, copied with it.
func (e *Extension) Plan(p *catalog.Profile, inputs, env map[string]string, opts backends.PlanOptions) (backends.Plan, error) {
	st, err := e.load(p, inputs, env, opts)
	return st.plan, err
}

// stack is a compose project loaded for a sandbox: what its plan shows,
// the networks whose addresses the provider chooses (see networks.go) and
// the file that create renders (nil for the canary's generated stack).
type stack struct {
	plan     backends.Plan
	networks []string
	loaded   *composefile.Loaded
}

func (e *Extension) load(p *catalog.Profile, inputs, env map[string]string, opts backends.PlanOptions) (stack, error) {
	if image := canaryImage(p, inputs); image != "" {
		return stack{plan: backends.Plan{Services: []string{"canary"}}, networks: []string{"default"}}, nil
	}
	file, err := composefile.Find(inputs)
	if err != nil {
		return stack{}, err
	}
	repo, err := filepath.EvalSymlinks(inputs["repo"])
	if err != nil {
		return stack{}, fmt.Errorf("input repo: %w", err)
	}
	return loadProject(repo, file, env, opts)
}

func loadProject(repo, file string, env map[string]string, opts backends.PlanOptions) (stack, error) {
	l, err := composefile.LoadFile(repo, file, env)
	if err != nil {
		return stack{}, err
	}
	plan, err := check(l, repo, opts)
	if err != nil {
		return stack{}, err
	}
	return stack{plan: plan, networks: managedNetworks(l.Project), loaded: l}, nil
}

// Kinds of plan findings: each has its own summary, and one finding of a
// kind lists every place it applies (findings.add), so Terraform never
// folds one kind under another.
const (
	noteContainerName = "Container Names Scoped to the Sandbox"
	noteFreePorts     = "Published Ports Get Free Host Ports"
	noteScopedNames   = "Network and Volume Names Scoped to the Sandbox"
	warnFixedPort     = "Fixed Host Ports"
	warnHostIPPort    = "Ports Bound to a Host Address"
	warnBindMount     = "Bind Mounts From Outside the Repo"
	warnDockerSocket  = "Docker Socket Mounted Into the Sandbox"
	warnHostNetwork   = "Host Networking"
	warnPrivileged    = "Privileged Containers"
	warnHostPID       = "Host PID Namespace"
	warnExternal      = "External Networks and Volumes"
	noteLimits        = "Limits From the Host"
	noteHardened      = "Privileges Dropped by the Restricted Policy"
)

// findings gathers a plan's findings by kind, in the order first found.
type findings struct {
	order  []string
	detail map[string][]string
}

func (f *findings) add(kind, format string, args ...any) {
	if f.detail == nil {
		f.detail = map[string][]string{}
	}
	if _, ok := f.detail[kind]; !ok {
		f.order = append(f.order, kind)
	}
	f.detail[kind] = append(f.detail[kind], fmt.Sprintf(format, args...))
}

func (f *findings) list() []backends.Finding {
	var out []backends.Finding
	for _, kind := range f.order {
		out = append(out, backends.Finding{Summary: kind, Detail: strings.Join(f.detail[kind], "\n")})
	}
	return out
}

// check is the plan-time verdict on a loaded project: every error in the
// file at once (joined), and the findings by kind. What the rendered file
// changes (composefile.Isolate) is said as a note, what it cannot change
// as a warning.
func check(l *composefile.Loaded, repo string, opts backends.PlanOptions) (backends.Plan, error) {
	project := l.Project
	freePorts := opts.PublishedPorts != backends.PortsAsWritten
	var plan backends.Plan
	var f findings
	var errs []error
	for _, name := range sortedServiceNames(project) {
		svc := project.Services[name]
		plan.Services = append(plan.Services, name)
		if svc.ContainerName != "" {
			if l.FromInclude(name) {
				errs = append(errs, l.Errorf([]string{"services"}, "service %q (from an included file) sets container_name %q: container names are global on a host, "+
					"and only the compose file itself is scoped to the sandbox; move the service into it or remove container_name", name, svc.ContainerName))
			} else {
				f.add(noteContainerName, "%s: service %q sets container_name %q: it becomes %q, and %q still resolves inside the sandbox",
					l.Ref("services", name, "container_name"), name, svc.ContainerName, composefile.ScopedName("sbx-<id>", svc.ContainerName), svc.ContainerName)
			}
		}
		if svc.Build != nil {
			if err := checkBuild(repo, name, svc.Build); err != nil {
				errs = append(errs, l.Errorf([]string{"services", name, "build"}, "%s", err.Error()))
			}
		}
		switch {
		case svc.NetworkMode == "host":
			f.add(warnHostNetwork, "%s: service %q uses the host's network (network_mode: host): its ports are the host's, so a second sandbox of this stack collides with it, "+
				"and it reaches everything on the host", l.Ref("services", name, "network_mode"), name)
		case strings.HasPrefix(svc.NetworkMode, "container:") && !composefile.ContainerInProject(project, strings.TrimPrefix(svc.NetworkMode, "container:")):
			f.add(warnHostNetwork, "%s: service %q joins the network of container %q, outside the sandbox", l.Ref("services", name, "network_mode"), name, strings.TrimPrefix(svc.NetworkMode, "container:"))
		}
		if svc.Privileged {
			f.add(warnPrivileged, "%s: service %q is privileged: it can reach the host's devices and kernel, so the sandbox does not contain it", l.Ref("services", name, "privileged"), name)
		}
		if svc.Pid == "host" {
			f.add(warnHostPID, "%s: service %q shares the host's process namespace (pid: host): it sees and can signal every process on the host", l.Ref("services", name, "pid"), name)
		}
		checkPorts(l, name, svc, freePorts, &f)
		for _, v := range svc.Volumes {
			if v.Type != types.VolumeTypeBind {
				continue
			}
			written := l.WrittenSource(name, v.Source)
			switch {
			case composefile.IsEngineSocket(v.Source):
				f.add(warnDockerSocket, "%s: service %q mounts the Docker socket %s: it controls the host's container engine, every other sandbox on it included",
					l.Ref("services", name, "volumes"), name, written)
			case strings.HasPrefix(written, "~"):
				f.add(warnBindMount, "%s: service %q bind-mounts %s, in the home directory of the host's user (not this machine's): the sandbox shares it with "+
					"everything else on the host, and checkpoints do not capture it", l.Ref("services", name, "volumes"), name, written)
			case !composefile.Within(repo, v.Source):
				f.add(warnBindMount, "%s: service %q bind-mounts %s from outside the repo: the sandbox shares it with "+
					"everything else on the host, and checkpoints do not capture it", l.Ref("services", name, "volumes"), name, written)
			}
		}
	}
	if len(plan.Services) == 0 {
		errs = append(errs, l.Errorf(nil, "no service would start: every service is disabled by a profile, or none is declared"))
	}
	for _, kind := range []string{"volumes", "networks"} {
		what := strings.TrimSuffix(kind, "s")
		for _, name := range resourceKeys(project, kind) {
			fixed := resourceName(project, kind, name)
			switch {
			case isExternal(project, kind, name) && kind == "volumes":
				f.add(warnExternal, "%s: volume %q is external: it is shared with whatever else uses it on the host, "+
					"destroying the sandbox leaves it in place, and checkpoints do not capture it", l.Ref(kind, name), name)
			case isExternal(project, kind, name):
				f.add(warnExternal, "%s: network %q is external: sandboxes attached to it can reach each other", l.Ref(kind, name), name)
			case !l.FixedName(kind, name):
			case l.ResourceFromInclude(kind, name):
				// Compose refuses a compose file that redefines what an
				// include declares, so no rendering can rename it.
				errs = append(errs, l.Errorf([]string{"include"}, "%s %q (from an included file) is named %q: names are global on a host, "+
					"so every sandbox of this stack would share it (and destroying one would remove it); move it into the compose file or remove its name", what, name, fixed))
			default:
				f.add(noteScopedNames, "%s: %s %q is named %q: each sandbox gets its own, named %q", l.Ref(kind, name, "name"), what, name, fixed,
					composefile.ScopedResourceName("sbx-<id>", name))
			}
		}
	}
	if l.MultiDocument() {
		errs = append(errs, l.Errorf(nil, "the file holds more than one YAML document (---): a sandbox runs the file rendered as one document; merge them into one"))
	}
	errs = append(errs, l.CheckPolicy(opts.Rules.Policy, repo, true)...)
	errs = append(errs, l.CheckLimits(opts.Rules)...)
	noteRules(l, opts.Rules, &f)
	if err := errors.Join(errs...); err != nil {
		return backends.Plan{}, err
	}
	plan.Warnings = f.list()
	return plan, nil
}

// noteRules says what the rendering adds by the host's rules: limits to
// the services that set none, and the restricted policy's hardening.
func noteRules(l *composefile.Loaded, r backends.Rules, f *findings) {
	limits := l.ServiceLimits(r)
	for _, name := range sortedServiceNames(l.Project) {
		svc := l.Project.Services[name]
		if added := r.Default.Add(r.Max); added != (backends.Limits{}) {
			f.add(noteLimits, "service %q runs with %s", name, describeLimits(limits[name]))
		}
		if r.Policy.Level.AtLeast(backends.PolicyRestricted) {
			if keys := composefile.Hardened(svc); len(keys) > 0 {
				f.add(noteHardened, "%s: service %q gets %s", l.Ref("services", name), name, strings.Join(keys, " and "))
			}
		}
	}
}

// describeLimits is a service's limits as a plan says them.
func describeLimits(l backends.Limits) string {
	var parts []string
	if l.Memory > 0 {
		parts = append(parts, "memory "+units.BytesSize(float64(l.Memory)))
	}
	if l.CPUs > 0 {
		parts = append(parts, "cpus "+strconv.FormatFloat(l.CPUs, 'f', -1, 64))
	}
	if l.Pids > 0 {
		parts = append(parts, "pids "+strconv.FormatInt(l.Pids, 10))
	}
	if len(parts) == 0 {
		return "no limits"
	}
	return strings.Join(parts, ", ")
}

// checkPorts says what becomes of a service's published ports.
func checkPorts(l *composefile.Loaded, name string, svc types.ServiceConfig, freePorts bool, f *findings) {
	ref := l.Ref("services", name, "ports")
	for _, port := range svc.Ports {
		if port.Published == "" {
			continue
		}
		written := port.Published + ":" + strconv.FormatUint(uint64(port.Target), 10)
		if port.HostIP != "" {
			written = port.HostIP + ":" + written
		}
		key := backends.EndpointKey(name, int(port.Target), port.Protocol)
		switch {
		case freePorts && !l.PortsFromExtends(name) && !l.FromInclude(name):
			f.add(noteFreePorts, "%s: service %q publishes %s: each sandbox gets a free host port for it instead, found in endpoints[%q]", ref, name, written, key)
		case port.HostIP != "":
			f.add(warnHostIPPort, "%s: service %q publishes %s, bound to host address %s: a second sandbox of this stack on the same host cannot start "+
				"while this one runs", ref, name, written, port.HostIP)
		default:
			why := "published_ports is \"as_written\""
			if freePorts {
				why = "the service extends another, whose ports compose adds to its own, or comes from an included file: its ports are kept as written"
			}
			f.add(warnFixedPort, "%s: service %q publishes host port %s (%s): a second sandbox of this stack on the same host cannot start "+
				"while this one runs; publish the container port alone (\"%d\") to get a free host port", ref, name, port.Published, why, port.Target)
		}
	}
}

func resourceKeys(p *types.Project, kind string) []string {
	if kind == "networks" {
		return slices.Sorted(maps.Keys(p.Networks))
	}
	return slices.Sorted(maps.Keys(p.Volumes))
}

func resourceName(p *types.Project, kind, key string) string {
	if kind == "networks" {
		return p.Networks[key].Name
	}
	return p.Volumes[key].Name
}

func isExternal(p *types.Project, kind, key string) bool {
	if kind == "networks" {
		return bool(p.Networks[key].External)
	}
	return bool(p.Volumes[key].External)
}

// checkBuild refuses a build the host cannot do: only the repo is copied to
// the host, so the build context must lie inside it.
func checkBuild(repo, service string, b *types.BuildConfig) error {
	ctx := b.Context
	if strings.Contains(ctx, "://") || strings.HasPrefix(ctx, "git@") {
		return fmt.Errorf("service %q builds from %s: the host builds from the copied repo only; vendor the build context into the repo", service, ctx)
	}
	if !composefile.Within(repo, ctx) {
		return fmt.Errorf("service %q has build context %s outside the repo %s: only the repo is copied to the host", service, ctx, repo)
	}
	if b.DockerfileInline != "" {
		return nil
	}
	dockerfile := b.Dockerfile
	if dockerfile == "" {
		dockerfile = "Dockerfile"
	}
	if !filepath.IsAbs(dockerfile) {
		dockerfile = filepath.Join(ctx, dockerfile)
	}
	if !composefile.Within(repo, dockerfile) {
		return fmt.Errorf("service %q uses Dockerfile %s outside the repo %s: only the repo is copied to the host", service, dockerfile, repo)
	}
	if st, err := os.Stat(dockerfile); err != nil || !st.Mode().IsRegular() {
		return fmt.Errorf("service %q: Dockerfile %s does not exist", service, dockerfile)
	}
	return nil
}

func sortedServiceNames(p *types.Project) []string {
	names := slices.Sorted(maps.Keys(p.Services))
	return names
}

// projectFromHost loads the project `compose config` printed on the host:
// a restore without a repo has its compose file only in the restored
// workspace there. Both compose v1 and v2 print the resolved project as
// YAML, which compose-go reads like any compose file, so a restored
// stack's networks get subnets from the pool and its file is rendered
// exactly as a new one's are.
func projectFromHost(raw []byte) (stack, error) {
	l, err := composefile.LoadResolved("compose config", raw)
	if err != nil {
		return stack{}, err
	}
	st := stack{networks: managedNetworks(l.Project), loaded: l}
	st.plan.Services = sortedServiceNames(l.Project)
	return st, nil
}

// oneShot are the services of p whose restart policy is written "no": an
// init or migration container, done once it exited 0. A service without
// the key is not one: compose's default is "no" too, but a server that
// exits is drift.
func oneShot(p *types.Project) []string {
	var out []string
	for _, name := range sortedServiceNames(p) {
		if p.Services[name].Restart == types.RestartPolicyNo {
			out = append(out, name)
		}
	}
	return out
}
