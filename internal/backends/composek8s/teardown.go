package composek8s

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

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
