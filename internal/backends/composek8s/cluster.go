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
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/clusters"
)

// pollInterval is how often a wait reads the namespace again: the API
// answers from the apiserver's cache, and one read lists every workload.
var pollInterval = 500 * time.Millisecond

// Create makes the sandbox's objects: its namespace, then what its pods
// mount and resolve (the repo's files uploaded from repoDir with a helper
// pod of helperImage, when a service mounts them), then its workloads
// level by level, each level once the conditions its services'
// depends_on ask of the ones before hold.
func Create(ctx context.Context, c *clusters.Cluster, o *Objects, repoDir, helperImage string) error {
	cl, ns := c.Client, o.Namespace.Name
	// A class the cluster lacks would leave every claim pending, and the
	// wait would only time out: said now, before anything is made.
	for _, pvc := range o.Claims {
		if sc := pvc.Spec.StorageClassName; sc != nil && *sc != "" {
			if _, err := cl.StorageV1().StorageClasses().Get(ctx, *sc, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				return fmt.Errorf("cluster %q has no storage class %q (the cluster block's storage_class), which volume %q asks for", c.Name, *sc, pvc.Name)
			} else if err != nil {
				return fmt.Errorf("storage class %s: %w", *sc, err)
			}
			break
		}
	}
	if _, err := cl.CoreV1().Namespaces().Create(ctx, o.Namespace, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("namespace %s: %w", ns, err)
	}
	create := func(kind, name string, err error) error {
		if err != nil {
			return fmt.Errorf("%s %s/%s: %w", kind, ns, name, err)
		}
		return nil
	}
	opts := metav1.CreateOptions{}
	for _, x := range o.ConfigMaps {
		_, err := cl.CoreV1().ConfigMaps(ns).Create(ctx, x, opts)
		if err := create("ConfigMap", x.Name, err); err != nil {
			return err
		}
	}
	for _, x := range o.Secrets {
		_, err := cl.CoreV1().Secrets(ns).Create(ctx, x, opts)
		if err := create("Secret", x.Name, err); err != nil {
			return err
		}
	}
	for _, x := range o.Claims {
		_, err := cl.CoreV1().PersistentVolumeClaims(ns).Create(ctx, x, opts)
		if err := create("PersistentVolumeClaim", x.Name, err); err != nil {
			return err
		}
	}
	if find(o.Claims, RepoClaim) != nil {
		if err := uploadDir(ctx, c, ns, helperImage, repoDir); err != nil {
			return err
		}
	}
	for _, x := range o.Services {
		_, err := cl.CoreV1().Services(ns).Create(ctx, x, opts)
		if err := create("Service", x.Name, err); err != nil {
			return err
		}
	}
	for _, x := range o.NetworkPolicies {
		_, err := cl.NetworkingV1().NetworkPolicies(ns).Create(ctx, x, opts)
		if err := create("NetworkPolicy", x.Name, err); err != nil {
			return err
		}
	}
	for i, level := range o.Levels {
		if i > 0 {
			if err := waitFor(ctx, cl, o, level); err != nil {
				return err
			}
		}
		for _, svc := range level {
			if d := find(o.Deployments, svc); d != nil {
				_, err := cl.AppsV1().Deployments(ns).Create(ctx, d, opts)
				if err := create("Deployment", svc, err); err != nil {
					return err
				}
			}
			if j := find(o.Jobs, svc); j != nil {
				_, err := cl.BatchV1().Jobs(ns).Create(ctx, j, opts)
				if err := create("Job", svc, err); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func find[T interface{ GetName() string }](list []T, name string) T {
	var zero T
	for _, x := range list {
		if x.GetName() == name {
			return x
		}
	}
	return zero
}

// waitFor waits until the dependencies of the services of level meet
// the conditions their depends_on asks.
func waitFor(ctx context.Context, cl kubernetes.Interface, o *Objects, level []string) error {
	want := map[string]string{} // dependency → the strictest condition asked of it
	for _, svc := range level {
		for dep, cond := range o.Waits[svc] {
			if cond == types.ServiceConditionCompletedSuccessfully || want[dep] == "" ||
				(cond == types.ServiceConditionHealthy && want[dep] == types.ServiceConditionStarted) {
				want[dep] = cond
			}
		}
	}
	if len(want) == 0 {
		return nil
	}
	for {
		seen, err := read(ctx, cl, o.Namespace.Name)
		if err != nil {
			return err
		}
		var pending []string
		for _, dep := range slices.Sorted(maps.Keys(want)) {
			if err := seen.failed(dep); err != nil {
				return fmt.Errorf("service %s, which others depend on: %w", dep, err)
			}
			if !seen.meets(dep, want[dep]) {
				pending = append(pending, dep+" ("+want[dep]+")")
			}
		}
		if len(pending) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", strings.Join(pending, ", "), ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

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
				switch w.Reason {
				case "ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName", "CreateContainerConfigError", "CrashLoopBackOff":
					return fmt.Errorf("pod %s: %s: %s", p.Name, w.Reason, w.Message)
				}
			}
		}
	}
	return nil
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

// replicas is a Deployment's replicas (1 when unset, as the API defaults
// it; 0 for none).
func replicas(d *appsv1.Deployment) int32 {
	switch {
	case d == nil:
		return 0
	case d.Spec.Replicas == nil:
		return 1
	default:
		return *d.Spec.Replicas
	}
}

// Stop scales every Deployment to 0 and returns once none of their pods
// is left; Jobs, claims and everything else stay (desired_state =
// "stopped").
func Stop(ctx context.Context, cl kubernetes.Interface, o *Objects) (backends.Status, error) {
	ns := o.Namespace.Name
	for _, d := range o.Deployments {
		if err := scale(ctx, cl, ns, d.Name, 0); err != nil {
			return backends.Status{}, err
		}
	}
	for {
		s, err := read(ctx, cl, ns)
		if err != nil {
			return backends.Status{}, err
		}
		var left []string
		for _, d := range o.Deployments {
			for _, p := range s.pods[d.Name] {
				left = append(left, p.Name)
			}
		}
		if len(left) == 0 {
			return s.status(o), nil
		}
		if err := pause(ctx); err != nil {
			return backends.Status{}, fmt.Errorf("pods %s are still stopping: %w", strings.Join(left, ", "), err)
		}
	}
}

// Start scales each Deployment back to the replicas its file declares, in
// depends_on order as at create; the caller then waits for readiness.
func Start(ctx context.Context, cl kubernetes.Interface, o *Objects) error {
	for i, level := range o.Levels {
		if i > 0 {
			if err := waitFor(ctx, cl, o, level); err != nil {
				return err
			}
		}
		for _, svc := range level {
			if d := find(o.Deployments, svc); d != nil {
				if err := scale(ctx, cl, o.Namespace.Name, svc, replicas(d)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func scale(ctx context.Context, cl kubernetes.Interface, ns, name string, n int32) error {
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n)
	if _, err := cl.AppsV1().Deployments(ns).Patch(ctx, name, k8stypes.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("scaling deployment %s/%s to %d: %w", ns, name, n, err)
	}
	return nil
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

// Teardown deletes the sandbox's namespace, and with it every object of
// the sandbox, and returns once the namespace is gone and the volumes of
// its claims are reclaimed as their class says (deleted, or recycled): no
// PersistentVolume still names a claim of it. A volume of a class that
// retains them stays, by the class's choice. A namespace already gone is
// success.
func Teardown(ctx context.Context, cl kubernetes.Interface, ns string) error {
	background := metav1.DeletePropagationBackground
	// The workloads, their pods and the claims first, each waited for: the
	// namespace controller, finding pods still terminating or claims held
	// by their finalizer, comes back only seconds later (11 s of a 15 s
	// teardown here); an empty namespace goes at its first pass.
	del := metav1.DeleteOptions{PropagationPolicy: &background}
	all := metav1.ListOptions{}
	errs := []error{
		cl.AppsV1().Deployments(ns).DeleteCollection(ctx, del, all),
		cl.BatchV1().Jobs(ns).DeleteCollection(ctx, del, all),
		cl.CoreV1().Pods(ns).DeleteCollection(ctx, del, all),
		cl.CoreV1().PersistentVolumeClaims(ns).DeleteCollection(ctx, del, all),
	}
	for _, err := range errs {
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the workloads of namespace %s: %w", ns, err)
		}
	}
	for {
		pods, err := cl.CoreV1().Pods(ns).List(ctx, all)
		if err != nil {
			return fmt.Errorf("listing the pods of namespace %s: %w", ns, err)
		}
		claims, err := cl.CoreV1().PersistentVolumeClaims(ns).List(ctx, all)
		if err != nil {
			return fmt.Errorf("listing the claims of namespace %s: %w", ns, err)
		}
		if len(pods.Items) == 0 && len(claims.Items) == 0 {
			break
		}
		if err := pause(ctx); err != nil {
			return fmt.Errorf("%d pods and %d claims of namespace %s are still going: %w", len(pods.Items), len(claims.Items), ns, err)
		}
	}
	err := cl.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{PropagationPolicy: &background})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting namespace %s: %w", ns, err)
	}
	for {
		_, err := cl.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if err != nil {
			return fmt.Errorf("namespace %s: %w", ns, err)
		}
		if err := pause(ctx); err != nil {
			return fmt.Errorf("namespace %s is still terminating: %w", ns, err)
		}
	}
	for {
		pvs, err := cl.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing the volumes of namespace %s: %w", ns, err)
		}
		var left []string
		for _, pv := range pvs.Items {
			ref := pv.Spec.ClaimRef
			if ref == nil || ref.Namespace != ns || pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRetain {
				continue
			}
			if pv.Status.Phase == corev1.VolumeFailed {
				return fmt.Errorf("volume %s of claim %s/%s: its reclaim failed: %s", pv.Name, ns, ref.Name, pv.Status.Message)
			}
			left = append(left, pv.Name)
		}
		if len(left) == 0 {
			return nil
		}
		if err := pause(ctx); err != nil {
			return fmt.Errorf("volumes %s of namespace %s are not reclaimed yet: %w", strings.Join(left, ", "), ns, err)
		}
	}
}

// pause waits pollInterval, or until ctx ends.
func pause(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(pollInterval):
		return nil
	}
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
