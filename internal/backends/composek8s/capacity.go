package composek8s

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
)

// Capacity reads what pool placement weighs of a cluster in three
// requests: the sandboxes' records, the nodes, and the pods (for what
// they request).
func (e *Extension) Capacity(ctx context.Context, c *backends.Cluster) (backends.Capacity, error) {
	sandboxes, err := ids(ctx, c)
	if err != nil {
		return backends.Capacity{}, err
	}
	nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return backends.Capacity{}, fmt.Errorf("listing the nodes: %w", err)
	}
	ready := map[string]bool{}
	var memBytes, milliCPU int64
	for _, n := range nodes.Items {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue && !n.Spec.Unschedulable {
				ready[n.Name] = true
				memBytes += n.Status.Allocatable.Memory().Value()
				milliCPU += n.Status.Allocatable.Cpu().MilliValue()
			}
		}
	}
	pods, err := c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "status.phase!=Succeeded,status.phase!=Failed"})
	if err != nil {
		return backends.Capacity{}, fmt.Errorf("listing the pods: %w", err)
	}
	var reqMem, reqMilliCPU int64
	for _, p := range pods.Items {
		if !ready[p.Spec.NodeName] {
			continue
		}
		for _, ctr := range p.Spec.Containers {
			reqMem += ctr.Resources.Requests.Memory().Value()
			reqMilliCPU += ctr.Resources.Requests.Cpu().MilliValue()
		}
	}
	return backends.Capacity{Sandboxes: len(sandboxes),
		MemTotalKiB: memBytes / 1024, MemAvailKiB: max(memBytes-reqMem, 0) / 1024,
		CPUs: int(milliCPU / 1000), Load1: float64(reqMilliCPU) / 1000}, nil
}
