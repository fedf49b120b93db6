package composek8s

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
)

// A sandbox's record lives in its namespace, as a ConfigMap: a refresh,
// an import or a destroy needs nothing but the cluster and the id, as on
// a compose host the record beside the workspace. It holds no secret.

// recordName is the record's ConfigMap; the conversion names no
// ConfigMap so (its are "env-", "config-" and "secret-" something).
const recordName = "sandboxer-record"

// recordKey is the record's key in the ConfigMap.
const recordKey = "record.json"

// record is what the ConfigMap holds: the sandbox, and the shape of its
// objects that reads, stops and starts act on (skeleton).
type record struct {
	Sandbox backends.Sandbox `json:"sandbox"`
	// Levels, Waits and Published are the Objects' own.
	Levels    [][]string                   `json:"levels"`
	Waits     map[string]map[string]string `json:"waits,omitempty"`
	Published []Published                  `json:"published,omitempty"`
}

// newRecord is the record of sb, whose objects are o. It sets what sb
// says of its services: their names, the one-shot ones (Jobs) and the
// replicas of the others.
func newRecord(sb *backends.Sandbox, o *Objects) *record {
	sb.Services = slices.Sorted(slices.Values(slices.Concat(o.Levels...)))
	sb.OneShot, sb.Replicas = nil, map[string]int{}
	for _, j := range o.Jobs {
		sb.OneShot = append(sb.OneShot, j.Name)
	}
	for _, d := range o.Deployments {
		sb.Replicas[d.Name] = int(replicas(d))
	}
	return &record{Sandbox: *sb, Levels: o.Levels, Waits: o.Waits, Published: o.Published}
}

// configMap is the record as its ConfigMap.
func (r *record) configMap(ns string) (*corev1.ConfigMap, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: recordName, Namespace: ns,
			Labels: map[string]string{LabelManagedBy: ManagedBy, LabelSandbox: r.Sandbox.ID}},
		Data: map[string]string{recordKey: string(data)},
	}, nil
}

// readRecord reads the record of the sandbox in ns, with the
// ConfigMap's version for a write that must not overwrite another's.
// backends.ErrNotFound: the namespace or its record is gone.
func readRecord(ctx context.Context, cl kubernetes.Interface, ns string) (*record, string, error) {
	cm, err := cl.CoreV1().ConfigMaps(ns).Get(ctx, recordName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, "", backends.ErrNotFound
	}
	if err != nil {
		return nil, "", fmt.Errorf("reading the record in namespace %s: %w", ns, err)
	}
	var r record
	if err := json.Unmarshal([]byte(cm.Data[recordKey]), &r); err != nil {
		return nil, "", fmt.Errorf("the record in namespace %s is not a sandbox's: %w", ns, err)
	}
	return &r, cm.ResourceVersion, nil
}

// writeRecord replaces the record; version is what it was read at ("":
// whatever is there).
func writeRecord(ctx context.Context, cl kubernetes.Interface, ns string, r *record, version string) error {
	cm, err := r.configMap(ns)
	if err != nil {
		return err
	}
	cm.ResourceVersion = version
	if _, err := cl.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("writing the record in namespace %s: %w", ns, err)
	}
	return nil
}

// skeleton is the Objects that reads, stops and starts need, rebuilt from
// a record: the namespace, each workload's name (and a Deployment's
// replicas), the creation order and the published ports. Nothing else of
// the compose file is needed after the create.
func (r *record) skeleton(ns string) *Objects {
	o := &Objects{Namespace: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		Levels: r.Levels, Waits: r.Waits, Published: r.Published}
	for _, svc := range slices.Sorted(maps.Keys(r.Sandbox.Replicas)) {
		n := int32(r.Sandbox.Replicas[svc]) //nolint:gosec // replicas a compose file declares, far below 2^31
		o.Deployments = append(o.Deployments, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: svc}, Spec: appsv1.DeploymentSpec{Replicas: &n}})
	}
	for _, svc := range r.Sandbox.OneShot {
		o.Jobs = append(o.Jobs, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: svc}})
	}
	return o
}
