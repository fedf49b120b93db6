package composek8s

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/compose-spec/compose-go/v2/types"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
)

// seen is a namespace's workloads as one read found them.
type seen struct {
	deployments map[string]appsv1.Deployment
	jobs        map[string]batchv1.Job
	pods        map[string][]corev1.Pod // by compose service
}

// read lists the namespace's workloads and pods: three requests whatever
// the sandbox's size.
func read(ctx context.Context, cl kubernetes.Interface, ns string) (*seen, error) {
	s := &seen{deployments: map[string]appsv1.Deployment{}, jobs: map[string]batchv1.Job{}, pods: map[string][]corev1.Pod{}}
	list := metav1.ListOptions{LabelSelector: LabelManagedBy + "=" + ManagedBy}
	ds, err := cl.AppsV1().Deployments(ns).List(ctx, list)
	if err != nil {
		return nil, fmt.Errorf("listing the deployments of %s: %w", ns, err)
	}
	for _, d := range ds.Items {
		s.deployments[d.Labels[LabelService]] = d
	}
	js, err := cl.BatchV1().Jobs(ns).List(ctx, list)
	if err != nil {
		return nil, fmt.Errorf("listing the jobs of %s: %w", ns, err)
	}
	for _, j := range js.Items {
		s.jobs[j.Labels[LabelService]] = j
	}
	ps, err := cl.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelSandbox})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of %s: %w", ns, err)
	}
	for _, p := range ps.Items {
		s.pods[p.Labels[LabelService]] = append(s.pods[p.Labels[LabelService]], p)
	}
	return s, nil
}

// meets says whether service svc meets a depends_on condition.
func (s *seen) meets(svc, cond string) bool {
	if j, ok := s.jobs[svc]; ok {
		if cond == types.ServiceConditionStarted {
			return j.Status.Active > 0 || jobDone(j)
		}
		return jobDone(j)
	}
	d, ok := s.deployments[svc]
	if !ok {
		return false
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	switch cond {
	case types.ServiceConditionStarted:
		running := 0
		for _, p := range s.pods[svc] {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return int32(running) >= want //nolint:gosec // a count of pods
	default:
		return d.Status.ObservedGeneration >= d.Generation && d.Status.ReadyReplicas >= want && d.Status.UpdatedReplicas >= want
	}
}

// failed is why svc can no longer become ready: a Job that failed, a
// container that keeps crashing or whose image cannot be pulled.
func (s *seen) failed(svc string) error {
	if j, ok := s.jobs[svc]; ok {
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
				return fmt.Errorf("its job failed: %s", c.Message)
			}
		}
	}
	for _, p := range s.pods[svc] {
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil {
				if waitingForGood(w) {
					return fmt.Errorf("pod %s: %s: %s", p.Name, w.Reason, w.Message)
				}
			}
		}
	}
	return nil
}

// waitingForGood says whether a container's waiting reason is one the
// kubelet will not get past by itself. A config error is final when a
// ConfigMap, Secret or key is missing, but not when the kubelet's own cache
// of them was slow to sync on a busy node: it retries that on its next sync.
func waitingForGood(w *corev1.ContainerStateWaiting) bool {
	switch w.Reason {
	case "ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName", "CrashLoopBackOff":
		return true
	case "CreateContainerConfigError":
		return !strings.Contains(w.Message, "failed to sync")
	}
	return false
}

func jobDone(j batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// WaitReady waits until every Deployment is available and every Job has
// completed, and returns the status it saw then.
func WaitReady(ctx context.Context, cl kubernetes.Interface, o *Objects) (backends.Status, error) {
	services := slices.Concat(o.Levels...)
	for {
		s, err := read(ctx, cl, o.Namespace.Name)
		if err != nil {
			return backends.Status{}, err
		}
		st := s.status(o)
		if st.State == backends.StatusReady {
			return st, nil
		}
		var errs []error
		for _, svc := range services {
			if err := s.failed(svc); err != nil {
				errs = append(errs, fmt.Errorf("service %s: %w", svc, err))
			}
		}
		if len(errs) > 0 {
			return st, fmt.Errorf("%w\n\n%s", errors.Join(errs...), diagnose(context.WithoutCancel(ctx), cl, o.Namespace.Name, s))
		}
		if err := pause(ctx); err != nil {
			return st, fmt.Errorf("not ready (%s): %w\n\n%s", backends.Describe(st.Services), err, diagnose(context.WithoutCancel(ctx), cl, o.Namespace.Name, s))
		}
	}
}

// Inspect reads the sandbox's namespace as it is.
func Inspect(ctx context.Context, cl kubernetes.Interface, o *Objects) (backends.Status, error) {
	if _, err := cl.CoreV1().Namespaces().Get(ctx, o.Namespace.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return backends.Status{State: backends.StatusMissing}, nil
	} else if err != nil {
		return backends.Status{}, err
	}
	s, err := read(ctx, cl, o.Namespace.Name)
	if err != nil {
		return backends.Status{}, err
	}
	return s.status(o), nil
}

// status is each declared service's state: a Job's completed (ready),
// running or exited; a Deployment's running once the replicas its file
// declares are ready, starting before, exited when scaled to 0 (stopped),
// scaled when it runs another number (drift), or missing.
func (s *seen) status(o *Objects) backends.Status {
	services := slices.Concat(o.Levels...)
	st := backends.Status{}
	ready, up := 0, 0
	for _, svc := range services {
		state := backends.ServiceMissing
		if j, ok := s.jobs[svc]; ok {
			switch {
			case jobDone(j):
				state = backends.ServiceCompleted
				ready++
			case j.Status.Active > 0:
				state = "running"
				up++
			default:
				state = "exited"
			}
		} else if d, ok := s.deployments[svc]; ok {
			want, live := replicas(find(o.Deployments, svc)), replicas(&d)
			switch {
			case live == 0:
				state = "exited"
			case live != want:
				state = "scaled"
				up++
			case d.Status.ReadyReplicas >= want:
				state = "running"
				ready++
				up++
			default:
				state = "starting"
				up++
			}
		}
		st.Services = append(st.Services, backends.ServiceState{Name: svc, State: state})
	}
	st.State = backends.SandboxState(true, len(services), ready, up)
	return st
}

// Endpoints are the published ports at nodeAddress: each endpoint key to
// "address:nodePort", read from the NodePort Services.
func Endpoints(ctx context.Context, cl kubernetes.Interface, o *Objects, nodeAddress string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range o.Published {
		svc, err := cl.CoreV1().Services(o.Namespace.Name).Get(ctx, p.Service, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("service %s: %w", p.Service, err)
		}
		for _, sp := range svc.Spec.Ports {
			if sp.Name == p.PortName && sp.NodePort != 0 {
				out[p.Key] = fmt.Sprintf("%s:%d", nodeAddress, sp.NodePort)
			}
		}
	}
	return out, nil
}

// WaitPublished waits until every TCP endpoint accepts a connection from
// here, where the user reaches it (wait_for_ports): a Service's NodePort
// opens once kube-proxy has programmed it, a moment after its pods are
// ready.
func WaitPublished(ctx context.Context, endpoints map[string]string) error {
	var d net.Dialer
	for _, key := range slices.Sorted(maps.Keys(endpoints)) {
		if strings.Contains(key, "/") { // udp, sctp: nothing to accept
			continue
		}
		for {
			dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			conn, err := d.DialContext(dctx, "tcp", endpoints[key])
			cancel()
			if err == nil {
				_ = conn.Close() // only the accept mattered
				break
			}
			if err := pause(ctx); err != nil {
				return fmt.Errorf("endpoint %s (%s) accepts no connection: %w", key, endpoints[key], err)
			}
		}
	}
	return nil
}

// diagnose describes what keeps a sandbox from being ready: each pod that
// is not, with its phase and its containers' waiting or terminated reason
// and exit code and their last log lines, then the namespace's recent
// warnings. Best effort, bounded: it only explains an error.
func diagnose(ctx context.Context, cl kubernetes.Interface, ns string, s *seen) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var b strings.Builder
	tail := int64(20)
	for _, svc := range slices.Sorted(maps.Keys(s.pods)) {
		for _, p := range s.pods[svc] {
			if podReady(p) || p.Status.Phase == corev1.PodSucceeded {
				continue
			}
			fmt.Fprintf(&b, "pod %s (service %s): %s\n", p.Name, svc, p.Status.Phase)
			for _, cs := range p.Status.ContainerStatuses {
				switch {
				case cs.State.Waiting != nil:
					fmt.Fprintf(&b, "  container %s waiting: %s %s\n", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message)
				case cs.State.Terminated != nil:
					fmt.Fprintf(&b, "  container %s terminated: %s, exit code %d\n", cs.Name, cs.State.Terminated.Reason, cs.State.Terminated.ExitCode)
				case cs.LastTerminationState.Terminated != nil:
					fmt.Fprintf(&b, "  container %s running, not ready; last exit code %d\n", cs.Name, cs.LastTerminationState.Terminated.ExitCode)
				default:
					fmt.Fprintf(&b, "  container %s running, not ready\n", cs.Name)
				}
				if cs.State.Waiting != nil && cs.RestartCount == 0 {
					continue // never ran: no logs
				}
				logs, err := cl.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: cs.Name, TailLines: &tail}).DoRaw(ctx)
				if err == nil && len(logs) > 0 {
					fmt.Fprintf(&b, "  last log lines:\n    %s\n", strings.ReplaceAll(strings.TrimRight(string(logs), "\n"), "\n", "\n    "))
				}
			}
		}
	}
	events, err := cl.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "type=Warning"})
	if err == nil && len(events.Items) > 0 {
		items := events.Items
		slices.SortFunc(items, func(a, b corev1.Event) int { return a.LastTimestamp.Compare(b.LastTimestamp.Time) })
		b.WriteString("recent warnings in namespace " + ns + ":\n")
		for _, e := range items[max(0, len(items)-10):] {
			fmt.Fprintf(&b, "  %s %s: %s\n", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
