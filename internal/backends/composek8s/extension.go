package composek8s

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/composefile"
)

// Name is the extension's catalog name.
const Name = "ext.compose-k8s"

// Extension is ext.compose-k8s: the backends.ClusterExtension that runs a
// compose file as the objects of a namespace of its own.
type Extension struct{}

var _ backends.ClusterExtension = (*Extension)(nil)

// New returns the extension.
func New() *Extension { return &Extension{} }

func (e *Extension) Name() string { return Name }

func (e *Extension) Validate(_ *catalog.Profile, inputs map[string]string) error {
	_, err := composefile.Find(inputs)
	return err
}

// planID stands for the id at plan time: the conversion's checks do not
// depend on it, only its length (a namespace name's) does.
const planID = "000000000000"

// Plan converts the compose file as a create would: every key a cluster
// cannot honour is an error now, each naming its key, and every key it
// ignores a warning.
func (e *Extension) Plan(_ *catalog.Profile, inputs, env map[string]string, opts backends.PlanOptions) (backends.Plan, error) {
	l, err := composefile.Load(inputs, env)
	if err != nil {
		return backends.Plan{}, err
	}
	o, err := Convert(l, Options{ID: planID, NamespacePrefix: "sbx", FreePorts: opts.PublishedPorts != backends.PortsAsWritten, Rules: opts.Rules})
	if err != nil {
		return backends.Plan{}, err
	}
	return backends.Plan{Services: slices.Sorted(slices.Values(slices.Concat(o.Levels...))), Warnings: o.Warnings}, nil
}

// namespace is the namespace of sandbox id on c.
func namespace(c *backends.Cluster, id string) string { return Namespace(c.NamespacePrefix, id) }

// Create converts the compose file, makes the namespace with the record
// first, then its objects, and waits until they are ready; on failure
// the namespace is deleted again, unless it was there before.
func (e *Extension) Create(ctx context.Context, c *backends.Cluster, req backends.Request) (*backends.Sandbox, backends.Status, error) {
	l, err := composefile.Load(req.Inputs, req.Env)
	if err != nil {
		return nil, backends.Status{}, err
	}
	o, err := Convert(l, Options{ID: req.ID, NamespacePrefix: c.NamespacePrefix, StorageClass: c.StorageClass,
		FreePorts: req.PublishedPorts != backends.PortsAsWritten, Sensitive: values(req.Env), Rules: req.Rules})
	if err != nil {
		return nil, backends.Status{}, err
	}
	start := time.Now()
	ns := o.Namespace.Name
	sb := &backends.Sandbox{ID: req.ID, Host: c.Name, Profile: req.Profile.Name, Extension: Name,
		Inputs: req.Inputs, Labels: req.Labels, SourceHash: req.SourceHash, ComposeProject: ns,
		PublishedPorts: req.PublishedPorts, WaitForPorts: req.WaitForPorts, CreatedAt: start.UTC()}
	sb.SetRules(req.Rules, backends.Limits{})
	if d, ok := ctx.Deadline(); ok {
		sb.CreateDeadline = &d
	}
	rec := newRecord(sb, o)
	cm, err := rec.configMap(ns)
	if err != nil {
		return nil, backends.Status{}, err
	}
	// The record first of the ConfigMaps: a namespace without one is not
	// a sandbox's that an import or a destroy could find.
	o.ConfigMaps = append([]*corev1.ConfigMap{cm}, o.ConfigMaps...)
	st, err := e.createAndWait(ctx, c, o, l.Repo, req.WaitForPorts)
	if err == nil {
		now := time.Now().UTC()
		rec.Sandbox.ReadyAt, rec.Sandbox.CreateDeadline = &now, nil
		err = writeRecord(ctx, c.Client, ns, rec, "")
	}
	if err != nil && !errors.Is(err, ErrNamespaceExists) {
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if terr := Teardown(cleanup, c.Client, ns); terr != nil {
			return nil, backends.Status{}, fmt.Errorf("%w\n\n%w: deleting namespace %s: %v", err, backends.ErrCleanupFailed, ns, terr)
		}
		return nil, backends.Status{}, err
	}
	if err != nil {
		return nil, backends.Status{}, err // made nothing
	}
	out := rec.Sandbox
	out.Timings = map[string]float64{backends.TimingTotal: time.Since(start).Round(time.Millisecond).Seconds()}
	return &out, st, nil
}

func (e *Extension) createAndWait(ctx context.Context, c *backends.Cluster, o *Objects, repo string, waitForPorts bool) (backends.Status, error) {
	if err := Create(ctx, c.Cluster, o, repo, c.HelperImage); err != nil {
		return backends.Status{}, err
	}
	return e.ready(ctx, c, o, waitForPorts)
}

// ready waits until o's workloads are ready (and their published ports
// answer, with waitForPorts) and returns what it saw, ports included.
func (e *Extension) ready(ctx context.Context, c *backends.Cluster, o *Objects, waitForPorts bool) (backends.Status, error) {
	st, err := WaitReady(ctx, c.Client, o)
	if err != nil {
		return st, err
	}
	if err := withPorts(ctx, c, o, &st); err != nil {
		return st, err
	}
	if waitForPorts {
		endpoints := map[string]string{}
		for _, s := range st.Services {
			for _, p := range s.Ports {
				if p.Protocol == "tcp" {
					endpoints[backends.EndpointKey(s.Name, p.Target, p.Protocol)] = fmt.Sprintf("%s:%d", c.NodeAddress, p.Published)
				}
			}
		}
		if err := WaitPublished(ctx, endpoints); err != nil {
			return st, err
		}
	}
	return st, nil
}

// withPorts adds the published ports (NodePorts) to st's services: one
// request, the namespace's Services.
func withPorts(ctx context.Context, c *backends.Cluster, o *Objects, st *backends.Status) error {
	if len(o.Published) == 0 {
		return nil
	}
	list, err := c.Client.CoreV1().Services(o.Namespace.Name).List(ctx, metav1.ListOptions{LabelSelector: LabelManagedBy + "=" + ManagedBy})
	if err != nil {
		return fmt.Errorf("listing the services of %s: %w", o.Namespace.Name, err)
	}
	nodePorts := map[string]int{} // Service/port name → nodePort
	for _, s := range list.Items {
		for _, p := range s.Spec.Ports {
			nodePorts[s.Name+"/"+p.Name] = int(p.NodePort)
		}
	}
	for i, s := range st.Services {
		if s.State != "running" {
			continue // nothing is reached while a service is down
		}
		for _, p := range o.Published {
			if strings.TrimPrefix(p.Service, publishedPrefix) != s.Name || nodePorts[p.Service+"/"+p.PortName] == 0 {
				continue
			}
			st.Services[i].Ports = append(st.Services[i].Ports, backends.Port{Target: p.Target, Protocol: p.Protocol,
				HostIP: "0.0.0.0", Published: nodePorts[p.Service+"/"+p.PortName]})
		}
	}
	return nil
}

// values are env's values, each one a Secret must hold.
func values(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for _, v := range env {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// lookup reads sandbox id's record and rebuilds its objects' skeleton.
func lookup(ctx context.Context, c *backends.Cluster, id string) (*record, string, *Objects, error) {
	if err := backends.CheckID(id); err != nil {
		return nil, "", nil, err
	}
	ns := namespace(c, id)
	rec, version, err := readRecord(ctx, c.Client, ns)
	if err != nil {
		return nil, "", nil, err
	}
	return rec, version, rec.skeleton(ns), nil
}

// Get reads the record and the services as they are: the record, then
// the workloads, pods and Services, each one request.
func (e *Extension) Get(ctx context.Context, c *backends.Cluster, id string) (*backends.Sandbox, backends.Status, error) {
	rec, _, o, err := lookup(ctx, c, id)
	if err != nil {
		return nil, backends.Status{}, err
	}
	s, err := read(ctx, c.Client, o.Namespace.Name)
	if err != nil {
		return nil, backends.Status{}, err
	}
	st := s.status(o)
	if err := withPorts(ctx, c, o, &st); err != nil {
		return nil, backends.Status{}, err
	}
	return &rec.Sandbox, st, nil
}

// ids are the sandboxes of the cluster's prefix: one request, their
// records' ConfigMaps, found by label and name.
func ids(ctx context.Context, c *backends.Cluster) ([]string, error) {
	cms, err := c.Client.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{
		LabelSelector: LabelManagedBy + "=" + ManagedBy, FieldSelector: "metadata.name=" + recordName})
	if err != nil {
		return nil, fmt.Errorf("listing the sandboxes' records: %w", err)
	}
	var out []string
	for _, cm := range cms.Items {
		id := cm.Labels[LabelSandbox]
		if backends.CheckID(id) == nil && cm.Namespace == namespace(c, id) { // not another prefix's
			out = append(out, id)
		}
	}
	slices.Sort(out) // as a host lists them
	return out, nil
}

// List reads every sandbox of the cluster's prefix, each as Get does.
func (e *Extension) List(ctx context.Context, c *backends.Cluster) ([]backends.SandboxInfo, error) {
	all, err := ids(ctx, c)
	if err != nil {
		return nil, err
	}
	var out []backends.SandboxInfo
	for _, id := range all {
		sb, st, err := e.Get(ctx, c, id)
		if errors.Is(err, backends.ErrNotFound) {
			continue // destroyed since the list
		}
		if err != nil {
			return nil, err
		}
		out = append(out, backends.SandboxInfo{Sandbox: sb, Status: st})
	}
	return out, nil
}

// Update writes change into the record, then stops or starts the
// workloads as desired says ("": neither); a start waits as a create
// does.
func (e *Extension) Update(ctx context.Context, c *backends.Cluster, id string, change func(*backends.Sandbox), desired string) (*backends.Sandbox, backends.Status, error) {
	rec, version, o, err := lookup(ctx, c, id)
	if err != nil {
		return nil, backends.Status{}, err
	}
	change(&rec.Sandbox)
	if err := writeRecord(ctx, c.Client, o.Namespace.Name, rec, version); err != nil {
		return nil, backends.Status{}, err
	}
	switch desired {
	case "":
		return &rec.Sandbox, backends.Status{}, nil
	case backends.DesiredStopped:
		st, err := Stop(ctx, c.Client, o)
		return &rec.Sandbox, st, err
	}
	start := time.Now()
	if err := Start(ctx, c.Client, o); err != nil {
		return nil, backends.Status{}, err
	}
	st, err := e.ready(ctx, c, o, rec.Sandbox.WaitForPorts)
	if err != nil {
		return nil, st, err
	}
	rec.Sandbox.Timings = map[string]float64{backends.TimingTotal: time.Since(start).Round(time.Millisecond).Seconds()}
	return &rec.Sandbox, st, nil
}

// Destroy deletes the namespace and waits until nothing of it is left.
func (e *Extension) Destroy(ctx context.Context, c *backends.Cluster, id string) error {
	if err := backends.CheckID(id); err != nil {
		return err
	}
	return Teardown(ctx, c.Client, namespace(c, id))
}

// Exec runs a command in the first running pod of a service, once the
// record says the sandbox has it and is not stopped.
func (e *Extension) Exec(ctx context.Context, c *backends.Cluster, req backends.ExecRequest) (backends.ExecResult, error) {
	rec, _, o, err := lookup(ctx, c, req.SandboxID)
	if err != nil {
		return backends.ExecResult{}, err
	}
	if err := backends.CheckExec(&rec.Sandbox, req.Service, req.Command); err != nil {
		return backends.ExecResult{}, err
	}
	return Exec(ctx, c.Cluster, o, req)
}

// Logs writes the logs of the sandbox's services.
func (e *Extension) Logs(ctx context.Context, c *backends.Cluster, req backends.LogsRequest) error {
	if err := backends.CheckSince(req.Since); err != nil {
		return err
	}
	var since time.Duration
	if req.Since != "" {
		if d, err := time.ParseDuration(req.Since); err == nil {
			since = d
		} else if t, err := time.Parse(time.RFC3339, req.Since); err == nil {
			since = max(time.Since(t), time.Second)
		}
	}
	_, _, o, err := lookup(ctx, c, req.SandboxID)
	if err != nil {
		return err
	}
	return Logs(ctx, c.Cluster, o, req.Services, int64(req.Tail), since, req.Out)
}

// OpenTunnel forwards a port of a service's pod to this machine's
// loopback through the API server.
func (e *Extension) OpenTunnel(ctx context.Context, c *backends.Cluster, id, service string, port, localPort int) (backends.ClusterTunnel, error) {
	rec, _, o, err := lookup(ctx, c, id)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(rec.Sandbox.Services, service) {
		return nil, fmt.Errorf("sandbox %s has no service %q; its services: %s", id, service, strings.Join(rec.Sandbox.Services, ", "))
	}
	f, err := OpenForward(ctx, c.Cluster, o, service, port, localPort)
	if errors.Is(err, backends.ErrServiceNotRunning) && rec.Sandbox.Stopped() {
		return nil, fmt.Errorf("sandbox %s %w (desired_state = %q): start it before opening a tunnel to it", id, backends.ErrSandboxStopped, backends.DesiredStopped)
	}
	return f, err
}
