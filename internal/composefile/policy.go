package composefile

import (
	"cmp"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/compose-spec/compose-go/v2/template"
	"github.com/compose-spec/compose-go/v2/types"
	"go.yaml.in/yaml/v3"
)

// Policy: what a compose file may ask of the host it runs on. The levels
// follow the Kubernetes Pod Security Standards (baseline, restricted),
// mapped onto compose keys, with the keys compose adds (bind mounts,
// external resources, files from outside the repo). docs/guides holds the
// table; Controls below is its one source.

// Level is a policy level. Trusted refuses nothing (the extensions warn).
type Level string

const (
	Trusted    Level = "trusted"
	Baseline   Level = "baseline"
	Restricted Level = "restricted"
)

// Levels are the levels, loosest first.
var Levels = []string{string(Trusted), string(Baseline), string(Restricted)}

func (v Level) rank() int { return slices.Index(Levels, string(v)) }

// AtLeast reports whether v is as strict as o or stricter. An empty level
// is trusted.
func (v Level) AtLeast(o Level) bool { return max(v.rank(), 0) >= max(o.rank(), 0) }

// Stricter is the stricter of v and o: a host's level is the floor a
// sandbox may only tighten.
func (v Level) Stricter(o Level) Level {
	if o.AtLeast(v) && o != "" {
		return o
	}
	if v == "" {
		return Trusted
	}
	return v
}

// Policy is a level and what the host block allows beside it.
type Policy struct {
	Level Level
	// Runtimes are the container runtimes allowed besides the engine's
	// default (runc).
	Runtimes []string
	// ExternalNetworks and ExternalVolumes are the external networks and
	// volumes a sandbox may join, by name.
	ExternalNetworks []string
	ExternalVolumes  []string
}

// dockerDefaultCaps are the capabilities Docker grants a container by
// default: adding one of them back is not an escalation.
var dockerDefaultCaps = []string{"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
	"NET_BIND_SERVICE", "NET_RAW", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}

// safeSysctls are the namespaced sysctls the Pod Security Standards allow
// at baseline: they affect only the container's own namespaces.
var safeSysctls = []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
	"net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time",
	"net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"}

// Control is one row of the policy table: what it refuses, and from which
// level.
type Control struct {
	Level Level
	Keys  string
	What  string
}

// Controls is the policy table, in the order findings are reported.
var Controls = []Control{
	{Baseline, "privileged", "`privileged: true`"},
	{Baseline, "network_mode, pid, ipc, uts, userns_mode, cgroup", "`host`, and `container:`/`service:` of anything outside the sandbox"},
	{Baseline, "cap_add", "capabilities beyond Docker's default set (" + strings.Join(dockerDefaultCaps, ", ") + "), and `ALL`"},
	{Baseline, "devices, device_cgroup_rules, gpus, deploy.resources.reservations.devices", "any"},
	{Baseline, "security_opt", "`seccomp=unconfined` or a seccomp profile file, `apparmor=unconfined`, `label=disable` and SELinux `user`/`role`/`type` other than `container_t`, `systempaths=unconfined`"},
	{Baseline, "sysctls", "any outside the namespaced safe set (" + strings.Join(safeSysctls, ", ") + ")"},
	{Baseline, "cgroup_parent", "any"},
	{Baseline, "runtime", "any other than `runc` and the host block's `allowed_runtimes`"},
	{Baseline, "volumes (bind), volumes.driver_opts.device", "a source outside the repo (after `~`, `..` and symlinks), the Docker socket included; a named volume backed by a host path or share"},
	{Baseline, "volumes_from", "`container:` of a container outside the sandbox"},
	{Baseline, "networks.external, volumes.external, networks.driver", "external networks and volumes the host block's `allowed_external_networks` / `allowed_external_volumes` do not name; network drivers other than `bridge` and `overlay` (`host`, `macvlan`, `ipvlan` reach the host's interfaces)"},
	{Baseline, "build, env_file, secrets/configs file, extends file, include", "a file or directory outside the repo"},
	{Baseline, "use_api_socket, provider, models", "any: the Docker socket with the host's registry credentials, or a program run on the host"},
	{Baseline, "build.network, build.privileged, build.entitlements, build.ssh, build.additional_contexts", "`host`, privileges, the host's SSH agent or keys, contexts outside the repo"},
	{Baseline, "${VARIABLE} interpolation", "a variable the sandbox's env (or the repo's `.env`) does not set, and the SSH session's own (`HOME`, `PATH`, `SSH_AUTH_SOCK`, ...): compose on the host fills them from its environment"},
	{Baseline, "(the repo)", "a symlink that points outside the repo (followed as the host follows it), or to an absolute path"},
	{Restricted, "user", "no `user`, or root (`root`, `0`)"},
	{Restricted, "cap_drop, cap_add", "`cap_drop` without `ALL` (added when the file sets no `cap_drop`); `cap_add` other than `NET_BIND_SERVICE`"},
	{Restricted, "security_opt", "`no-new-privileges:false` (`no-new-privileges:true` added when the file does not set it)"},
}

// box is the directory a sandbox's files must stay in, and how a finding
// is phrased for it.
type box struct {
	dir  string // absolute, symlinks resolved where it is on this machine
	what string // "the repo" (on this machine) or "the workspace" (on the host)
}

// CheckPolicy returns every control of p the project breaks, each its own
// error naming the service, the key and the value; nil under trusted.
// repo is the directory the project's files must stay in: the repo on this
// machine at plan and create, the workspace on the host for a restore
// (whose paths are the host's, and whose symlinks are not checked here).
func (l *Loaded) CheckPolicy(p Policy, repo string, onThisMachine bool) []error {
	if !p.Level.AtLeast(Baseline) {
		return nil
	}
	b := box{dir: repo, what: "the workspace"}
	if onThisMachine {
		b.what = "the repo"
	}
	c := policyCheck{l: l, p: p, box: b}
	for _, name := range slices.Sorted(maps.Keys(l.Project.Services)) {
		c.service(name, l.Project.Services[name])
	}
	c.resources()
	c.files()
	if onThisMachine {
		c.symlinks()
		c.hostVariables()
	}
	return c.errs
}

// sessionVariables are set in every SSH session on a host, and compose
// prefers its shell's environment to the .env: whatever the sandbox's env
// says, these would take the host's values.
var sessionVariables = []string{"HOME", "PATH", "PWD", "OLDPWD", "USER", "LOGNAME", "SHELL", "MAIL", "TMPDIR", "XDG_RUNTIME_DIR",
	"SSH_AUTH_SOCK", "SSH_CONNECTION", "SSH_CLIENT", "SSH_TTY", "DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CERT_PATH", "DOCKER_CONTEXT"}

// hostVariables refuses variables the compose file interpolates that the
// sandbox's .env does not set, and the SSH session's own: the host's
// compose takes them from its environment (a bind mount of ${HOME}, of
// ${SSH_AUTH_SOCK}), which no check on this machine sees.
func (c *policyCheck) hostVariables() {
	var doc map[string]any
	if yaml.Unmarshal(c.l.raw, &doc) != nil {
		return // the loader read it; nothing to add
	}
	vars := template.ExtractVariables(doc, nil)
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		_, set := c.l.Project.Environment[name]
		switch {
		case slices.Contains(sessionVariables, name):
			c.refuse(nil, "variable %s is the host's own: compose on the host takes it from the SSH session's environment, whatever the sandbox's env says", name)
		case !set:
			c.refuse(nil, "variable %s is not set in the sandbox's env (or the repo's .env): compose on the host would take it from the host's environment", name)
		}
	}
}

type policyCheck struct {
	l    *Loaded
	p    Policy
	box  box
	errs []error
}

func (c *policyCheck) refuse(keys []string, format string, args ...any) {
	c.errs = append(c.errs, c.l.Errorf(keys, "%s (refused by policy %q)", fmt.Sprintf(format, args...), c.p.Level))
}

func (c *policyCheck) service(name string, svc types.ServiceConfig) {
	at := func(key string) []string { return []string{"services", name, key} }
	if svc.Privileged {
		c.refuse(at("privileged"), "service %q: privileged: true gives it the host's devices and kernel", name)
	}
	c.namespaces(name, svc)
	for _, capName := range svc.CapAdd {
		switch capName := normalCap(capName); {
		case c.p.Level.AtLeast(Restricted) && capName != "NET_BIND_SERVICE":
			c.refuse(at("cap_add"), "service %q: cap_add %s: only NET_BIND_SERVICE may be added", name, capName)
		case !slices.Contains(dockerDefaultCaps, capName):
			c.refuse(at("cap_add"), "service %q: cap_add %s is beyond Docker's default capabilities", name, capName)
		}
	}
	if len(svc.Devices) > 0 {
		c.refuse(at("devices"), "service %q: devices gives it the host's devices", name)
	}
	if len(svc.DeviceCgroupRules) > 0 {
		c.refuse(at("device_cgroup_rules"), "service %q: device_cgroup_rules gives it the host's devices", name)
	}
	if len(svc.Gpus) > 0 {
		c.refuse(at("gpus"), "service %q: gpus gives it the host's GPUs", name)
	}
	if d := svc.Deploy; d != nil && d.Resources.Reservations != nil && len(d.Resources.Reservations.Devices) > 0 {
		c.refuse(at("deploy"), "service %q: deploy.resources.reservations.devices gives it the host's devices", name)
	}
	c.securityOpt(name, svc.SecurityOpt)
	for _, key := range slices.Sorted(maps.Keys(svc.Sysctls)) {
		if !slices.Contains(safeSysctls, key) {
			c.refuse(at("sysctls"), "service %q: sysctls %s is not in the namespaced safe set", name, key)
		}
	}
	if svc.CgroupParent != "" {
		c.refuse(at("cgroup_parent"), "service %q: cgroup_parent %q puts it outside the engine's cgroups", name, svc.CgroupParent)
	}
	if rt := svc.Runtime; rt != "" && rt != "runc" && !slices.Contains(c.p.Runtimes, rt) {
		c.refuse(at("runtime"), "service %q: runtime %q is not one the host allows (runc, and allowed_runtimes in the host block)", name, rt)
	}
	for _, v := range svc.Volumes {
		c.volume(name, v)
	}
	for _, from := range svc.VolumesFrom {
		if ctr, ok := strings.CutPrefix(from, "container:"); ok {
			ctr, _, _ = strings.Cut(ctr, ":")
			if !ContainerInProject(c.l.Project, ctr) {
				c.refuse(at("volumes_from"), "service %q: volumes_from %s takes the volumes of a container outside the sandbox", name, from)
			}
		}
	}
	if svc.UseAPISocket {
		c.refuse(at("use_api_socket"), "service %q: use_api_socket mounts the Docker socket and the host's registry credentials", name)
	}
	if svc.Provider != nil {
		c.refuse(at("provider"), "service %q: provider %q runs a program on the host", name, svc.Provider.Type)
	}
	if len(svc.Models) > 0 {
		c.refuse(at("models"), "service %q: models runs a model runner on the host", name)
	}
	if b := svc.Build; b != nil {
		c.build(name, b)
	}
	if c.p.Level.AtLeast(Restricted) {
		c.restricted(name, svc)
	}
}

// build refuses what a build may ask of the host: its network, privileges,
// its SSH agent and keys, and files outside the repo.
func (c *policyCheck) build(name string, b *types.BuildConfig) {
	keys := []string{"services", name, "build"}
	switch {
	case b.Network == "host":
		c.refuse(keys, "service %q: build.network: host builds in the host's network namespace", name)
	case strings.HasPrefix(b.Network, "container:"):
		c.refuse(keys, "service %q: build.network: %s builds in a container outside the sandbox", name, b.Network)
	}
	if b.Privileged {
		c.refuse(keys, "service %q: build.privileged builds with the host's devices and kernel", name)
	}
	if len(b.Entitlements) > 0 {
		c.refuse(keys, "service %q: build.entitlements %s grant the build the host's privileges", name, strings.Join(b.Entitlements, ", "))
	}
	if len(b.SSH) > 0 {
		c.refuse(keys, "service %q: build.ssh gives the build the host's SSH agent or keys", name)
	}
	for _, k := range slices.Sorted(maps.Keys(b.AdditionalContexts)) {
		v := b.AdditionalContexts[k]
		if !strings.Contains(v, "://") && !strings.HasPrefix(v, "docker-image:") && !strings.HasPrefix(v, "service:") && !Within(c.box.dir, v) {
			c.refuse(keys, "service %q: build.additional_contexts %s is %s, outside %s", name, k, v, c.box.what)
		}
	}
}

// namespaces refuses the host's namespaces and those of containers outside
// the sandbox.
func (c *policyCheck) namespaces(name string, svc types.ServiceConfig) {
	for _, ns := range []struct{ key, value string }{
		{"network_mode", svc.NetworkMode}, {"pid", svc.Pid}, {"ipc", svc.Ipc}, {"uts", svc.Uts}, {"userns_mode", svc.UserNSMode}, {"cgroup", svc.Cgroup},
	} {
		keys := []string{"services", name, ns.key}
		switch v := ns.value; {
		case v == "host":
			c.refuse(keys, "service %q: %s: host shares the host's namespace", name, ns.key)
		case strings.HasPrefix(v, "container:") && !ContainerInProject(c.l.Project, strings.TrimPrefix(v, "container:")):
			c.refuse(keys, "service %q: %s: %s joins a container outside the sandbox", name, ns.key, v)
		case strings.HasPrefix(v, "service:"):
			if _, ok := c.l.Project.Services[strings.TrimPrefix(v, "service:")]; !ok {
				c.refuse(keys, "service %q: %s: %s joins a service outside the sandbox", name, ns.key, v)
			}
		}
	}
}

func (c *policyCheck) securityOpt(name string, opts []string) {
	keys := []string{"services", name, "security_opt"}
	for _, o := range opts {
		// Docker takes "key=value" and the older "key:value".
		k, v := o, ""
		if i := strings.IndexAny(o, "=:"); i >= 0 {
			k, v = o[:i], o[i+1:]
		}
		switch k {
		case "seccomp":
			c.refuse(keys, "service %q: security_opt %q: a seccomp profile other than the engine's default may allow any system call", name, o)
		case "apparmor":
			if v == "unconfined" {
				c.refuse(keys, "service %q: security_opt %q unconfines AppArmor", name, o)
			}
		case "label":
			kind, value, _ := strings.Cut(v, ":")
			switch {
			case kind == "disable":
				c.refuse(keys, "service %q: security_opt %q disables SELinux labelling", name, o)
			case kind == "user" || kind == "role":
				c.refuse(keys, "service %q: security_opt %q sets an SELinux %s", name, o, kind)
			case kind == "type" && !slices.Contains([]string{"container_t", "container_init_t", "container_kvm_t"}, value):
				c.refuse(keys, "service %q: security_opt %q sets an SELinux type other than the container types", name, o)
			}
		case "systempaths":
			if v == "unconfined" {
				c.refuse(keys, "service %q: security_opt %q unmasks the host's /proc and /sys paths", name, o)
			}
		case "disable":
			c.refuse(keys, "service %q: security_opt %q disables SELinux labelling", name, o)
		case "no-new-privileges":
			if on, err := strconv.ParseBool(cmp.Or(v, "true")); (err != nil || !on) && c.p.Level.AtLeast(Restricted) {
				c.refuse(keys, "service %q: security_opt %q: the restricted policy requires no-new-privileges", name, o)
			}
		}
	}
}

func (c *policyCheck) volume(name string, v types.ServiceVolumeConfig) {
	keys := []string{"services", name, "volumes"}
	switch v.Type {
	case types.VolumeTypeBind:
		written := c.l.WrittenSource(name, v.Source)
		switch {
		case IsEngineSocket(v.Source):
			c.refuse(keys, "service %q: bind mount %s is a container engine's socket: it controls the host", name, written)
		case strings.HasPrefix(written, "~") || !Within(c.box.dir, v.Source):
			c.refuse(keys, "service %q: bind mount %s is outside %s", name, written, c.box.what)
		}
	case types.VolumeTypeNamedPipe:
		c.refuse(keys, "service %q: named pipe %s is the host's", name, v.Source)
	}
}

// restricted requires what the restricted level adds: a non-root user,
// every capability dropped (NET_BIND_SERVICE aside), no new privileges.
// Hardening adds cap_drop and no-new-privileges where the file is silent.
func (c *policyCheck) restricted(name string, svc types.ServiceConfig) {
	user, _, _ := strings.Cut(svc.User, ":")
	if uid, err := strconv.ParseInt(user, 10, 64); err == nil && uid == 0 || user == "" || user == "root" {
		c.refuse([]string{"services", name, "user"}, "service %q: user %q: the restricted policy requires a non-root user (e.g. user: \"1000:1000\")", name, svc.User)
	}
	if len(svc.CapDrop) > 0 && !slices.ContainsFunc(svc.CapDrop, func(s string) bool { return normalCap(s) == "ALL" }) {
		c.refuse([]string{"services", name, "cap_drop"}, "service %q: cap_drop %s: the restricted policy requires cap_drop: [ALL]", name, strings.Join(svc.CapDrop, ", "))
	}
}

// resources refuses external networks and volumes the host does not allow,
// named volumes backed by host paths, and network drivers that reach the
// host's interfaces.
func (c *policyCheck) resources() {
	p := c.l.Project
	for _, key := range slices.Sorted(maps.Keys(p.Networks)) {
		n := p.Networks[key]
		name := n.Name
		if name == "" {
			name = key
		}
		switch {
		case bool(n.External) && !slices.Contains(c.p.ExternalNetworks, name):
			c.refuse([]string{"networks", key}, "network %q is external (%q), and the host block's allowed_external_networks does not name it", key, name)
		case !bool(n.External) && n.Driver != "" && n.Driver != "bridge" && n.Driver != "overlay":
			c.refuse([]string{"networks", key, "driver"}, "network %q: driver %q reaches the host's interfaces", key, n.Driver)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(p.Volumes)) {
		v := p.Volumes[key]
		name := v.Name
		if name == "" {
			name = key
		}
		switch {
		case bool(v.External) && !slices.Contains(c.p.ExternalVolumes, name):
			c.refuse([]string{"volumes", key}, "volume %q is external (%q), and the host block's allowed_external_volumes does not name it", key, name)
		case v.DriverOpts["device"] != "" || (v.Driver != "" && v.Driver != "local"):
			c.refuse([]string{"volumes", key}, "volume %q is backed by %s, outside the sandbox", key, volumeBacking(v))
		}
	}
}

func volumeBacking(v types.VolumeConfig) string {
	if d := v.DriverOpts["device"]; d != "" {
		return fmt.Sprintf("device %q", d)
	}
	return fmt.Sprintf("driver %q", v.Driver)
}

// files refuses files the project reads from outside the box: compose on
// the host finds only what the repo copy holds there.
func (c *policyCheck) files() {
	p := c.l.Project
	outside := func(path string) bool { return path != "" && !Within(c.box.dir, path) }
	for _, name := range slices.Sorted(maps.Keys(p.Services)) {
		svc := p.Services[name]
		if b := svc.Build; b != nil && !strings.Contains(b.Context, "://") && outside(b.Context) {
			c.refuse([]string{"services", name, "build"}, "service %q: build context %s is outside %s", name, b.Context, c.box.what)
		}
		for _, f := range svc.EnvFiles {
			if outside(f.Path) {
				c.refuse([]string{"services", name, "env_file"}, "service %q: env_file %s is outside %s", name, f.Path, c.box.what)
			}
		}
		if n := c.l.lines.node("services", name, "extends", "file"); n != nil && n.Kind == yaml.ScalarNode {
			if f := filepath.Join(filepath.Dir(c.l.Path), n.Value); filepath.IsAbs(c.l.Path) && !Within(c.box.dir, f) {
				c.refuse([]string{"services", name, "extends"}, "service %q: extends file %s is outside %s", name, n.Value, c.box.what)
			}
		}
	}
	for kind, objs := range map[string]map[string]types.FileObjectConfig{"secrets": fileObjects(map[string]types.SecretConfig(p.Secrets)), "configs": fileObjects(map[string]types.ConfigObjConfig(p.Configs))} {
		for _, key := range slices.Sorted(maps.Keys(objs)) {
			if f := objs[key].File; outside(f) {
				c.refuse([]string{kind, key, "file"}, "%s %q: file %s is outside %s", strings.TrimSuffix(kind, "s"), key, f, c.box.what)
			}
		}
	}
	if inc := c.l.lines.node("include"); inc != nil && inc.Kind == yaml.SequenceNode && filepath.IsAbs(c.l.Path) {
		for _, e := range inc.Content {
			paths := []*yaml.Node{e}
			if e.Kind == yaml.MappingNode {
				paths = nil
				if n := mapValue(e, "path"); n != nil {
					paths = append(paths, n)
					if n.Kind == yaml.SequenceNode {
						paths = n.Content
					}
				}
			}
			for _, n := range paths {
				if n.Kind == yaml.ScalarNode && !Within(c.box.dir, filepath.Join(filepath.Dir(c.l.Path), n.Value)) {
					c.refuse([]string{"include"}, "include %s is outside %s", n.Value, c.box.what)
				}
			}
		}
	}
}

func fileObjects[T types.SecretConfig | types.ConfigObjConfig](m map[string]T) map[string]types.FileObjectConfig {
	out := make(map[string]types.FileObjectConfig, len(m))
	for k, v := range m {
		out[k] = types.FileObjectConfig(v)
	}
	return out
}

// symlinks refuses links in the repo that point outside it: the copy keeps
// them as links, so a bind mount through one would reach the host's files.
func (c *policyCheck) symlinks() {
	_ = filepath.WalkDir(c.box.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return nil //nolint:nilerr // an unreadable entry is not copied either
		}
		target, err := os.Readlink(p)
		if err != nil {
			return nil //nolint:nilerr // as above
		}
		// Resolved as the host will (every link on the way followed: a
		// link to "." beside one to "s/.." climbs out), and an absolute
		// target names the host's own files, wherever it points here.
		resolved, err := filepath.EvalSymlinks(p)
		if err != nil {
			resolved = filepath.Join(filepath.Dir(p), target) // dangling: as written
		}
		if filepath.IsAbs(target) || !Within(c.box.dir, resolved) {
			rel, _ := filepath.Rel(c.box.dir, p)
			c.errs = append(c.errs, fmt.Errorf("repo %s: symlink %s points to %s, outside the repo (refused by policy %q): "+
				"the copy on the host keeps it a link, so a mount through it would reach the host's files", c.box.dir, rel, target, c.p.Level))
		}
		return nil
	})
}

func normalCap(s string) string { return strings.TrimPrefix(strings.ToUpper(s), "CAP_") }

// ContainerInProject reports whether a container name is one a service of
// the project sets.
func ContainerInProject(p *types.Project, name string) bool {
	for _, svc := range p.Services {
		if svc.ContainerName == name {
			return true
		}
	}
	return false
}

// IsEngineSocket reports whether a bind mount's source is a container
// engine's API socket (or the directory holding one): whoever holds it runs
// anything on the host.
func IsEngineSocket(source string) bool {
	base := filepath.Base(source)
	return base == "docker.sock" || base == "podman.sock" || base == "containerd.sock" || filepath.Clean(source) == "/var/run" || filepath.Clean(source) == "/run"
}

// Hardened says what the restricted policy adds to a service that leaves
// it out: these only take privileges away, so a service that runs as a
// non-root user (which restricted requires) keeps its meaning.
func Hardened(svc types.ServiceConfig) []string {
	var keys []string
	if len(svc.CapDrop) == 0 {
		keys = append(keys, "cap_drop: [ALL]")
	}
	if !slices.ContainsFunc(svc.SecurityOpt, func(o string) bool { return strings.HasPrefix(o, "no-new-privileges") }) {
		keys = append(keys, "security_opt: no-new-privileges:true")
	}
	return keys
}

// harden writes what Hardened names into a service's node.
func harden(node *yaml.Node, svc types.ServiceConfig) {
	if len(svc.CapDrop) == 0 {
		setMapValue(node, "cap_drop", &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{plain("ALL")}})
	}
	if slices.ContainsFunc(svc.SecurityOpt, func(o string) bool { return strings.HasPrefix(o, "no-new-privileges") }) {
		return
	}
	opts := &yaml.Node{Kind: yaml.SequenceNode}
	for _, o := range svc.SecurityOpt {
		opts.Content = append(opts.Content, quoted(escape(o)))
	}
	opts.Content = append(opts.Content, quoted("no-new-privileges:true"))
	setMapValue(node, "security_opt", opts)
}
