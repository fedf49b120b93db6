package composek8s

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
)

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
	return inOrder(ctx, cl, o, func(svc string) error {
		if d := find(o.Deployments, svc); d != nil {
			return scale(ctx, cl, o.Namespace.Name, svc, replicas(d))
		}
		return nil
	})
}

func scale(ctx context.Context, cl kubernetes.Interface, ns, name string, n int32) error {
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n)
	if _, err := cl.AppsV1().Deployments(ns).Patch(ctx, name, k8stypes.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("scaling deployment %s/%s to %d: %w", ns, name, n, err)
	}
	return nil
}
