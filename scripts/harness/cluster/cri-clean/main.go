// Command cri-clean stops and removes every pod sandbox of a CRI runtime, as
// the kubelet would when its pods go away: the runtime tears down each pod's
// network (CNI DEL, the pod's network namespace) and its containers. cluster.sh
// down runs it after stopping the kubelet, so that stopping containerd leaves
// no container, shim, mount or network namespace behind.
//
//	cri-clean unix:///run/sandboxer-k8s/containerd/containerd.sock
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: cri-clean unix:///path/to/cri.sock")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "cri-clean:", err)
		os.Exit(1)
	}
}

func run(endpoint string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	list, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("list pod sandboxes: %w", err)
	}
	var failed error
	for _, sb := range list.Items {
		name := sb.Id
		if m := sb.Metadata; m != nil {
			name = m.Namespace + "/" + m.Name + " (" + sb.Id[:12] + ")"
		}
		if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			failed = fmt.Errorf("stop pod sandbox %s: %w", name, err)
			fmt.Fprintln(os.Stderr, "cri-clean:", failed)
			continue
		}
		if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			failed = fmt.Errorf("remove pod sandbox %s: %w", name, err)
			fmt.Fprintln(os.Stderr, "cri-clean:", failed)
			continue
		}
		fmt.Fprintln(os.Stderr, "cri-clean: removed pod sandbox", name)
	}
	return failed
}
