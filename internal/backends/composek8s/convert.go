// Package composek8s turns a compose file into the Kubernetes objects of
// one namespace per sandbox (ext.compose-k8s). The conversion is
// deterministic: the same file and options give the same objects, in the
// same order, so a plan can tell from the client alone what a cluster
// will run, and refuse, all at once, what it cannot (keys.go).
package composek8s

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/composefile"
)

// Labels every object of a sandbox carries: the namespace is listed and
// read back by them, and pods are selected by sandbox and service.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "sandboxer"
	LabelSandbox   = "sandboxer.dev/sandbox"
	LabelService   = "sandboxer.dev/service"
	// labelNetwork + a compose network's name marks the pods on it.
	labelNetwork = "net.sandboxer.dev/"
)

// RepoClaim is the PersistentVolumeClaim the repo's files are uploaded
// into; a bind mount of a path in the repo mounts it with a subPath.
const RepoClaim = "repo"

// publishedPrefix names a service's NodePort Service: its headless Service
// keeps the service's own name, so that `web:80` resolves as in compose.
const publishedPrefix = "published-"

// Options are what the conversion takes besides the compose file.
type Options struct {
	ID              string // the sandbox id
	NamespacePrefix string // the namespace is <prefix>-<id>
	StorageClass    string // of every claim; "" is the cluster's default
	VolumeSize      string // of every named volume's claim (default 1Gi)
	RepoSize        string // of the repo's claim (default 1Gi)
	// FreePorts: every published port gets a nodePort the cluster picks;
	// false asks for the port the file writes (published_ports =
	// "as_written"), which must be in the cluster's NodePort range.
	FreePorts bool
	// Sensitive are values that must never be in a ConfigMap (env_wo's):
	// an environment variable holding one goes to a Secret.
	Sensitive []string
	// Rules are the cluster's policy and limits, as on a compose host.
	Rules composefile.Rules
}

// Objects are a sandbox's Kubernetes objects, each list sorted by name.
type Objects struct {
	Namespace       *corev1.Namespace
	ConfigMaps      []*corev1.ConfigMap
	Secrets         []*corev1.Secret
	Claims          []*corev1.PersistentVolumeClaim
	Services        []*corev1.Service
	NetworkPolicies []*networkingv1.NetworkPolicy
	Deployments     []*appsv1.Deployment
	Jobs            []*batchv1.Job
	// Levels are the compose services in creation order: every service of
	// a level is created once what its depends_on asks of the levels before
	// holds (Waits).
	Levels [][]string
	// Waits are, for each service, its dependencies and the condition each
	// must meet first (types.ServiceCondition*).
	Waits map[string]map[string]string
	// Published are the published ports, each an endpoint.
	Published []Published
	// Warnings are the keys the cluster ignores, one finding per key.
	Warnings []backends.Finding
}

// Published is a published port: its endpoint key ("web:80") and the
// NodePort Service port that carries it.
type Published struct {
	Key         string
	Service     string // the NodePort Service's name
	PortName    string
	Target      int
	Protocol    string
	AsWrittenAt int // the nodePort asked for (published_ports = "as_written"), else 0
}

// Namespace is the namespace of sandbox id.
func Namespace(prefix, id string) string { return prefix + "-" + id }

// Convert converts l. Its error joins every problem of the file, each
// naming its key; Objects is nil then.
func Convert(l *composefile.Loaded, opts Options) (*Objects, error) {
	c := &converter{l: l, p: l.Project, opts: opts, ns: Namespace(opts.NamespacePrefix, opts.ID), names: map[string]string{}}
	c.errs = append(c.errs, l.CheckPolicy(opts.Rules.Policy, l.Repo, true)...)
	c.errs = append(c.errs, l.CheckLimits(opts.Rules)...)
	c.topLevel()
	o := &Objects{Namespace: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns, Labels: c.labels()}}, Waits: map[string]map[string]string{}}
	c.o = o
	for _, name := range slices.Sorted(maps.Keys(c.p.Services)) {
		c.service(name, c.p.Services[name])
	}
	c.volumes()
	c.networkPolicies()
	o.Levels = c.levels()
	if err := errors.Join(c.errs...); err != nil {
		return nil, err
	}
	sortObjects(o)
	return o, nil
}

type converter struct {
	l     *composefile.Loaded
	p     *types.Project
	opts  Options
	ns    string
	o     *Objects
	errs  []error
	names map[string]string // each Service's name → what claimed it, for collisions
	claim map[string]bool   // named volumes mounted
	repo  bool              // the repo's claim is mounted
}

func (c *converter) errorf(keys []string, format string, args ...any) {
	c.errs = append(c.errs, c.l.Errorf(keys, format, args...))
}

func (c *converter) labels(extra ...string) map[string]string {
	m := map[string]string{LabelManagedBy: ManagedBy, LabelSandbox: c.opts.ID}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return m
}

func (c *converter) meta(name string, extra ...string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: c.ns, Labels: c.labels(extra...)}
}

// topLevel refuses the top-level keys and resources a namespace cannot hold.
func (c *converter) topLevel() {
	for _, k := range c.l.Keys() {
		switch {
		case strings.HasPrefix(k.Name, "x-"), slices.Contains([]string{"services", "networks", "volumes", "configs", "secrets", "name", "version", "include"}, k.Name):
		default:
			c.errs = append(c.errs, &composefile.FileError{File: c.l.Path, Line: k.Line,
				Msg: fmt.Sprintf("top-level %q: a cluster sandbox has no such resource; remove it", k.Name)})
		}
	}
	for _, key := range slices.Sorted(maps.Keys(c.p.Networks)) {
		n := c.p.Networks[key]
		at := []string{"networks", key}
		if n.External {
			c.errorf(at, "network %q is external: a sandbox's namespace joins no network outside it; remove `external`", key)
		}
		if errs := validation.IsQualifiedName(labelNetwork + key); len(errs) > 0 {
			c.errorf(at, "network %q cannot name a label on a cluster (%s): rename it", key, strings.Join(errs, "; "))
		}
	}
	for _, key := range slices.Sorted(maps.Keys(c.p.Volumes)) {
		v := c.p.Volumes[key]
		at := []string{"volumes", key}
		switch {
		case bool(v.External):
			c.errorf(at, "volume %q is external: a sandbox's claims are its own; remove `external`", key)
		case v.Driver != "" && v.Driver != "local", len(v.DriverOpts) > 0:
			c.errorf(at, "volume %q: `driver` and `driver_opts` are the engine's; on a cluster a volume is a claim of the cluster block's storage_class: remove them", key)
		}
	}
}

// service converts one compose service into its workload, its Services
// and its ConfigMaps and Secrets.
func (c *converter) service(name string, svc types.ServiceConfig) {
	at := []string{"services", name}
	c.keys(name)
	if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
		c.errorf(at, "service %q cannot name a Kubernetes Service, which is how %q resolves in the sandbox (%s): rename it", name, name, strings.Join(errs, "; "))
		return
	}
	if svc.Image == "" {
		c.errorf(at, "service %q has `build` and no `image`: a cluster does not build; build and push the image, then write `image:`", name)
		return
	}
	ctr := corev1.Container{Name: name, Image: svc.Image, Command: svc.Entrypoint, Args: svc.Command,
		WorkingDir: svc.WorkingDir, TTY: svc.Tty, Stdin: svc.StdinOpen}
	switch svc.PullPolicy {
	case types.PullPolicyAlways:
		ctr.ImagePullPolicy = corev1.PullAlways
	case types.PullPolicyNever:
		ctr.ImagePullPolicy = corev1.PullNever
	case "", types.PullPolicyMissing, types.PullPolicyIfNotPresent:
		ctr.ImagePullPolicy = corev1.PullIfNotPresent
	default:
		c.errorf(append(at, "pull_policy"), "service %q: pull_policy %q has no counterpart on a cluster (it pulls, never builds, by imagePullPolicy); write `always`, `never` or `missing`", name, svc.PullPolicy)
	}
	// No service links: compose puts no <SERVICE>_PORT variables in a
	// container's environment, and a stack's own names could collide.
	pod := corev1.PodSpec{Hostname: svc.Hostname, EnableServiceLinks: new(bool)}
	c.security(name, svc, &ctr, &pod)
	c.environment(name, &ctr)
	c.ports(name, svc, &ctr)
	ctr.ReadinessProbe = probe(svc.HealthCheck)
	ctr.Resources = c.resources(svc)
	c.mounts(name, svc, &ctr, &pod)
	c.files(svc, &ctr, &pod)
	c.hosts(name, svc, &pod)
	if svc.StopGracePeriod != nil {
		s := int64(seconds(*svc.StopGracePeriod))
		pod.TerminationGracePeriodSeconds = &s
	}
	if svc.Platform != "" {
		osName, arch, _ := strings.Cut(svc.Platform, "/")
		arch, _, _ = strings.Cut(arch, "/")
		pod.NodeSelector = map[string]string{"kubernetes.io/os": osName}
		if arch != "" {
			pod.NodeSelector["kubernetes.io/arch"] = arch
		}
	}
	pod.Containers = []corev1.Container{ctr}

	podLabels := c.labels(LabelService, name)
	for _, n := range slices.Sorted(maps.Keys(svc.Networks)) {
		podLabels[labelNetwork+n] = "true"
	}
	if len(svc.Networks) == 0 && svc.NetworkMode == "" {
		podLabels[labelNetwork+"default"] = "true"
	}
	annotations := map[string]string{}
	maps.Copy(annotations, svc.Labels)
	maps.Copy(annotations, svc.Annotations)
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: podLabels}, Spec: pod}
	if len(annotations) > 0 {
		tmpl.Annotations = annotations
	}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{LabelSandbox: c.opts.ID, LabelService: name}}

	if svc.Restart == types.RestartPolicyNo {
		tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
		backoff := int32(0)
		c.o.Jobs = append(c.o.Jobs, &batchv1.Job{ObjectMeta: c.meta(name, LabelService, name),
			Spec: batchv1.JobSpec{BackoffLimit: &backoff, Template: tmpl}})
	} else {
		tmpl.Spec.RestartPolicy = corev1.RestartPolicyAlways
		replicas := int32(1)
		if svc.Scale != nil {
			replicas = clamp32(int64(*svc.Scale))
		}
		if d := svc.Deploy; d != nil {
			if d.Replicas != nil {
				replicas = clamp32(int64(*d.Replicas))
			}
			if d.Mode == "global" {
				c.errorf(append(at, "deploy", "mode"), "service %q: `mode: global` runs a task per swarm node; on a cluster write `replicas` instead", name)
			}
			if len(d.Placement.Constraints) > 0 || len(d.Placement.Preferences) > 0 {
				c.errorf(append(at, "deploy", "placement"), "service %q: `placement` names swarm nodes; remove it (the cluster schedules pods)", name)
			}
		}
		c.o.Deployments = append(c.o.Deployments, &appsv1.Deployment{ObjectMeta: c.meta(name, LabelService, name),
			Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: selector, Template: tmpl,
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}}})
	}
	if len(svc.DependsOn) > 0 {
		w := map[string]string{}
		for dep, d := range svc.DependsOn {
			cond := d.Condition
			if cond == "" {
				cond = types.ServiceConditionStarted
			}
			w[dep] = cond
		}
		c.o.Waits[name] = w
	}
}

// keys sorts the service's written keys by the table: ignored ones warn,
// refused and unknown ones are errors.
func (c *converter) keys(name string) {
	for _, k := range c.l.Keys("services", name) {
		if strings.HasPrefix(k.Name, "x-") {
			continue
		}
		key, ok := serviceKey[k.Name]
		switch {
		case !ok:
			c.errs = append(c.errs, &composefile.FileError{File: c.l.Path, Line: k.Line,
				Msg: fmt.Sprintf("service %q: key %q has no Kubernetes counterpart this provider knows; remove it", name, k.Name)})
		case key.Does == Refused:
			c.errs = append(c.errs, &composefile.FileError{File: c.l.Path, Line: k.Line,
				Msg: fmt.Sprintf("service %q: `%s` cannot run on a cluster: %s", name, k.Name, key.What)})
		case key.Does == Ignored && (k.Name != "build" || c.p.Services[name].Image != ""):
			c.o.Warnings = append(c.o.Warnings, backends.Finding{
				Summary: "A compose key is ignored on a cluster",
				Detail:  fmt.Sprintf("%s: service %q: `%s` is ignored: %s", c.l.Ref("services", name, k.Name), name, k.Name, key.What)})
		}
	}
}

// security maps user, privileges and capabilities.
func (c *converter) security(name string, svc types.ServiceConfig, ctr *corev1.Container, pod *corev1.PodSpec) {
	at := []string{"services", name}
	sc := &corev1.SecurityContext{}
	set := false
	if svc.User != "" {
		u, g, hasGroup := strings.Cut(svc.User, ":")
		uid, err := strconv.ParseInt(u, 10, 64)
		if err != nil {
			c.errorf(append(at, "user"), "service %q: user %q: a cluster takes numeric ids only; write `user: \"<uid>[:<gid>]\"`", name, svc.User)
		} else {
			sc.RunAsUser, set = &uid, true
		}
		if hasGroup {
			gid, err := strconv.ParseInt(g, 10, 64)
			if err != nil {
				c.errorf(append(at, "user"), "service %q: group %q: a cluster takes numeric ids only", name, g)
			} else {
				sc.RunAsGroup = &gid
			}
		}
	}
	if svc.Privileged {
		sc.Privileged, set = &svc.Privileged, true
	}
	if svc.ReadOnly {
		sc.ReadOnlyRootFilesystem, set = &svc.ReadOnly, true
	}
	if len(svc.CapAdd) > 0 || len(svc.CapDrop) > 0 {
		caps := &corev1.Capabilities{}
		for _, cp := range svc.CapAdd {
			caps.Add = append(caps.Add, corev1.Capability(strings.TrimPrefix(strings.ToUpper(cp), "CAP_")))
		}
		for _, cp := range svc.CapDrop {
			caps.Drop = append(caps.Drop, corev1.Capability(strings.TrimPrefix(strings.ToUpper(cp), "CAP_")))
		}
		sc.Capabilities, set = caps, true
	}
	for _, opt := range svc.SecurityOpt {
		switch strings.ReplaceAll(opt, "=", ":") {
		case "no-new-privileges", "no-new-privileges:true":
			f := false
			sc.AllowPrivilegeEscalation, set = &f, true
		case "no-new-privileges:false":
		default:
			c.errorf(append(at, "security_opt"), "service %q: security_opt %q: only no-new-privileges has a counterpart on a cluster (seccomp and AppArmor profiles are the cluster's); remove it", name, opt)
		}
	}
	if set {
		ctr.SecurityContext = sc
	}
	if len(svc.Sysctls) > 0 {
		psc := &corev1.PodSecurityContext{}
		for _, k := range slices.Sorted(maps.Keys(svc.Sysctls)) {
			psc.Sysctls = append(psc.Sysctls, corev1.Sysctl{Name: k, Value: svc.Sysctls[k]})
		}
		pod.SecurityContext = psc
	}
}

// environment puts the service's env_file and environment, merged as
// compose merges them, into a ConfigMap (and a Secret for values holding
// a sensitive one) the container takes whole.
func (c *converter) environment(name string, ctr *corev1.Container) {
	env, err := c.l.ServiceEnvironment(name)
	if err != nil {
		c.errorf([]string{"services", name, "env_file"}, "service %q: %v", name, err)
		return
	}
	if len(env) == 0 {
		return
	}
	plain, secret := map[string]string{}, map[string]string{}
	for k, v := range env {
		if c.sensitive(v) {
			secret[k] = v
		} else {
			plain[k] = v
		}
	}
	cm := "env-" + name
	if len(plain) > 0 {
		c.o.ConfigMaps = append(c.o.ConfigMaps, &corev1.ConfigMap{ObjectMeta: c.meta(cm, LabelService, name), Data: plain})
		ctr.EnvFrom = append(ctr.EnvFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}}})
	}
	if len(secret) > 0 {
		c.o.Secrets = append(c.o.Secrets, &corev1.Secret{ObjectMeta: c.meta(cm, LabelService, name), StringData: secret, Type: corev1.SecretTypeOpaque})
		ctr.EnvFrom = append(ctr.EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}}})
	}
}

func (c *converter) sensitive(v string) bool {
	for _, s := range c.opts.Sensitive {
		if s != "" && strings.Contains(v, s) {
			return true
		}
	}
	return false
}

// ports: every port of the service (ports and expose) on its headless
// Service, so the name resolves to the pods and the ports are declared;
// the published ones also on a NodePort Service of their own.
func (c *converter) ports(name string, svc types.ServiceConfig, ctr *corev1.Container) {
	at := []string{"services", name}
	type port struct {
		target   int
		protocol string
	}
	var all []port
	seen := map[port]bool{}
	add := func(p port) {
		if !seen[p] {
			seen[p] = true
			all = append(all, p)
		}
	}
	var published []corev1.ServicePort
	for _, p := range svc.Ports {
		proto := strings.ToLower(p.Protocol)
		if proto == "" {
			proto = "tcp"
		}
		add(port{int(p.Target), proto})
		sp := corev1.ServicePort{Name: portName(int(p.Target), proto), Protocol: corev1.Protocol(strings.ToUpper(proto)),
			Port: clamp32(int64(p.Target)), TargetPort: intstr.FromInt32(clamp32(int64(p.Target)))}
		pub := Published{Key: backends.EndpointKey(name, int(p.Target), proto), Service: publishedPrefix + name,
			PortName: sp.Name, Target: int(p.Target), Protocol: proto}
		if !c.opts.FreePorts && p.Published != "" {
			n, err := strconv.Atoi(p.Published)
			if err != nil || n < 30000 || n > 32767 {
				c.errorf(append(at, "ports"), "service %q: published port %s: with published_ports = \"as_written\" a cluster publishes on a NodePort (30000-32767 by default); write a port in that range, or use published_ports = \"free\"", name, p.Published)
			} else {
				sp.NodePort, pub.AsWrittenAt = clamp32(int64(n)), n
			}
		}
		if slices.ContainsFunc(published, func(q corev1.ServicePort) bool { return q.Name == sp.Name }) {
			continue // the same target published twice: one endpoint, as compose's is one per target
		}
		published = append(published, sp)
		c.o.Published = append(c.o.Published, pub)
	}
	for _, e := range svc.Expose {
		n, proto, _ := strings.Cut(e, "/")
		if proto == "" {
			proto = "tcp"
		}
		lo, hi, isRange := strings.Cut(n, "-")
		from, err1 := strconv.Atoi(lo)
		to := from
		var err2 error
		if isRange {
			to, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || to < from {
			c.errorf(append(at, "expose"), "service %q: expose %q is not a port or a range of ports", name, e)
			continue
		}
		for t := from; t <= to; t++ {
			add(port{t, strings.ToLower(proto)})
		}
	}
	svcPorts := make([]corev1.ServicePort, 0, len(all))
	for _, p := range all {
		svcPorts = append(svcPorts, corev1.ServicePort{Name: portName(p.target, p.protocol), Protocol: corev1.Protocol(strings.ToUpper(p.protocol)),
			Port: clamp32(int64(p.target)), TargetPort: intstr.FromInt32(clamp32(int64(p.target)))})
		ctr.Ports = append(ctr.Ports, corev1.ContainerPort{Name: portName(p.target, p.protocol), ContainerPort: clamp32(int64(p.target)), Protocol: corev1.Protocol(strings.ToUpper(p.protocol))})
	}
	// The service's own name, its container_name, its links' and its
	// networks' aliases: each a headless Service selecting its pods.
	names := []string{name}
	if svc.ContainerName != "" {
		names = append(names, svc.ContainerName)
	}
	for _, n := range slices.Sorted(maps.Keys(svc.Networks)) {
		if cfg := svc.Networks[n]; cfg != nil {
			names = append(names, cfg.Aliases...)
			if cfg.Ipv4Address != "" || cfg.Ipv6Address != "" {
				c.errorf(append(at, "networks", n), "service %q: a fixed address on network %q: pod addresses are the network plugin's; remove `ipv4_address` / `ipv6_address`", name, n)
			}
		}
	}
	for _, link := range svc.Links {
		if _, alias, ok := strings.Cut(link, ":"); ok {
			names = append(names, alias)
		}
	}
	for _, n := range names {
		if !c.claimName(at, n, fmt.Sprintf("service %q", name)) {
			continue
		}
		c.o.Services = append(c.o.Services, &corev1.Service{ObjectMeta: c.meta(n, LabelService, name), Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{LabelSandbox: c.opts.ID, LabelService: name},
			Ports: svcPorts, PublishNotReadyAddresses: true,
		}})
	}
	if len(published) > 0 && c.claimName(at, publishedPrefix+name, fmt.Sprintf("service %q's published ports", name)) {
		c.o.Services = append(c.o.Services, &corev1.Service{ObjectMeta: c.meta(publishedPrefix+name, LabelService, name), Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeNodePort, Selector: map[string]string{LabelSandbox: c.opts.ID, LabelService: name}, Ports: published,
		}})
	}
}

// claimName takes a Service name for what, refusing one that is not a
// valid name or that something else took.
func (c *converter) claimName(at []string, n, what string) bool {
	if errs := validation.IsDNS1035Label(n); len(errs) > 0 {
		c.errorf(at, "%s: the name %q cannot name a Kubernetes Service, which is how it resolves in the sandbox (%s): rename it", what, n, strings.Join(errs, "; "))
		return false
	}
	if other, ok := c.names[n]; ok {
		if other != what {
			c.errorf(at, "%s: the name %q is also %s's: a namespace has one Service of a name; rename one", what, n, other)
		}
		return false
	}
	c.names[n] = what
	return true
}

func portName(target int, protocol string) string { return protocol + "-" + strconv.Itoa(target) }

// probe is a healthcheck as a readiness probe; nil without one.
func probe(h *types.HealthCheckConfig) *corev1.Probe {
	if h == nil || h.Disable || len(h.Test) == 0 {
		return nil
	}
	var cmd []string
	switch h.Test[0] {
	case "NONE":
		return nil
	case "CMD":
		cmd = h.Test[1:]
	case "CMD-SHELL":
		cmd = []string{"/bin/sh", "-c", strings.Join(h.Test[1:], " ")}
	default:
		cmd = []string{"/bin/sh", "-c", strings.Join(h.Test, " ")}
	}
	// compose's defaults: every 30 s, 30 s to answer, unhealthy after 3.
	p := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cmd}},
		PeriodSeconds: 30, TimeoutSeconds: 30, FailureThreshold: 3, SuccessThreshold: 1}
	if h.Interval != nil {
		p.PeriodSeconds = seconds(*h.Interval)
	}
	if h.Timeout != nil {
		p.TimeoutSeconds = seconds(*h.Timeout)
	}
	if h.Retries != nil {
		p.FailureThreshold = clamp32(int64(min(*h.Retries, math.MaxInt32)))
	}
	return p
}

// seconds is d in whole seconds, at least 1 (what probes and grace periods count in).
func seconds(d types.Duration) int32 {
	return max(clamp32((int64(d)+999_999_999)/1_000_000_000), 1)
}

// clamp32 is v as an int32, held to its range (the API's counts and ports
// are int32; compose's are wider).
func clamp32(v int64) int32 {
	return int32(max(min(v, math.MaxInt32), math.MinInt32)) //nolint:gosec // held to the range above
}

// resources are the service's own limits and reservations, else the
// cluster's default limits, as on a compose host.
func (c *converter) resources(svc types.ServiceConfig) corev1.ResourceRequirements {
	var r corev1.ResourceRequirements
	mem, cpus := int64(svc.MemLimit), float64(svc.CPUS)
	reqMem, reqCPUs := int64(svc.MemReservation), 0.0
	if d := svc.Deploy; d != nil {
		if l := d.Resources.Limits; l != nil {
			mem, cpus = max(mem, int64(l.MemoryBytes)), max(cpus, float64(l.NanoCPUs))
		}
		if q := d.Resources.Reservations; q != nil {
			reqMem, reqCPUs = max(reqMem, int64(q.MemoryBytes)), float64(q.NanoCPUs)
		}
	}
	if mem == 0 {
		mem = c.opts.Rules.Default.Memory
	}
	if cpus == 0 {
		cpus = c.opts.Rules.Default.CPUs
	}
	r.Limits, r.Requests = resourceList(mem, cpus), resourceList(reqMem, reqCPUs)
	return r
}

// resourceList is memory bytes and cpus as a list; nil when both are 0.
func resourceList(mem int64, cpus float64) corev1.ResourceList {
	if mem <= 0 && cpus <= 0 {
		return nil
	}
	l := corev1.ResourceList{}
	if mem > 0 {
		l[corev1.ResourceMemory] = *resource.NewQuantity(mem, resource.BinarySI)
	}
	if cpus > 0 {
		l[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(cpus*1000), resource.DecimalSI)
	}
	return l
}

// hosts: extra_hosts and DNS settings.
func (c *converter) hosts(name string, svc types.ServiceConfig, pod *corev1.PodSpec) {
	for _, host := range slices.Sorted(maps.Keys(svc.ExtraHosts)) {
		for _, ip := range svc.ExtraHosts[host] {
			if ip == "host-gateway" {
				c.errorf([]string{"services", name, "extra_hosts"}, "service %q: extra_hosts %s:host-gateway: a pod has no engine host to reach; remove it", name, host)
				continue
			}
			i := slices.IndexFunc(pod.HostAliases, func(a corev1.HostAlias) bool { return a.IP == ip })
			if i < 0 {
				pod.HostAliases = append(pod.HostAliases, corev1.HostAlias{IP: ip})
				i = len(pod.HostAliases) - 1
			}
			pod.HostAliases[i].Hostnames = append(pod.HostAliases[i].Hostnames, host)
		}
	}
	if len(svc.DNS) > 0 || len(svc.DNSSearch) > 0 || len(svc.DNSOpts) > 0 {
		cfg := &corev1.PodDNSConfig{Nameservers: svc.DNS, Searches: svc.DNSSearch}
		for _, o := range svc.DNSOpts {
			k, v, ok := strings.Cut(o, ":")
			opt := corev1.PodDNSConfigOption{Name: k}
			if ok {
				opt.Value = &v
			}
			cfg.Options = append(cfg.Options, opt)
		}
		pod.DNSConfig = cfg
	}
}

// levels orders the services by depends_on: a level holds the services
// whose dependencies are all in levels before it, sorted by name.
func (c *converter) levels() [][]string {
	done := map[string]bool{}
	var out [][]string
	for len(done) < len(c.p.Services) {
		var level []string
		for _, name := range slices.Sorted(maps.Keys(c.p.Services)) {
			if done[name] {
				continue
			}
			ready := true
			for dep := range c.p.Services[name].DependsOn {
				if _, declared := c.p.Services[dep]; declared && !done[dep] {
					ready = false
				}
			}
			if ready {
				level = append(level, name)
			}
		}
		if len(level) == 0 { // a cycle: compose-go refuses those when it loads
			return out
		}
		for _, n := range level {
			done[n] = true
		}
		out = append(out, level)
	}
	return out
}

func sortObjects(o *Objects) {
	byName := func(a, b metav1.Object) int { return strings.Compare(a.GetName(), b.GetName()) }
	slices.SortFunc(o.ConfigMaps, func(a, b *corev1.ConfigMap) int { return byName(a, b) })
	slices.SortFunc(o.Secrets, func(a, b *corev1.Secret) int { return byName(a, b) })
	slices.SortFunc(o.Claims, func(a, b *corev1.PersistentVolumeClaim) int { return byName(a, b) })
	slices.SortFunc(o.Services, func(a, b *corev1.Service) int { return byName(a, b) })
	slices.SortFunc(o.NetworkPolicies, func(a, b *networkingv1.NetworkPolicy) int { return byName(a, b) })
	slices.SortFunc(o.Published, func(a, b Published) int { return strings.Compare(a.Key, b.Key) })
}
