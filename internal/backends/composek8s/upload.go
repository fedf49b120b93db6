package composek8s

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/clusters"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/localdir"
)

// uploadPod is the helper pod that fills the repo's claim.
const uploadPod = "repo-upload"

// uploadDir uploads dir's files into the repo claim (UploadRepo), as a
// tar stream made while it is read.
func uploadDir(ctx context.Context, c *clusters.Cluster, ns, image, dir string) error {
	r, w := io.Pipe()
	go func() { _ = w.CloseWithError(localdir.WriteTar(w, dir)) }() // the reader sees the error
	defer func() { _ = r.Close() }()                                // ends the writer if the upload stopped reading
	return UploadRepo(ctx, c.Client, c.REST, ns, image, r)
}

// UploadRepo fills the sandbox's repo claim with a tar stream (the repo's
// files): a helper pod of image mounts the claim, `tar -x` reads the
// stream through the API's exec, and the pod is deleted. The pod is the
// claim's first consumer, so a storage class that binds on first use
// places the volume on the pod's node.
func UploadRepo(ctx context.Context, cl kubernetes.Interface, cfg *rest.Config, ns, image string, tarStream io.Reader) error {
	zero := int64(0)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: uploadPod, Namespace: ns, Labels: map[string]string{LabelManagedBy: ManagedBy}},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &zero,
			Containers: []corev1.Container{{
				Name: "upload", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
				// Waits for the exec; ends by itself if the provider dies.
				Command:      []string{"sleep", "3600"},
				VolumeMounts: []corev1.VolumeMount{{Name: "repo", MountPath: "/repo"}},
			}},
			Volumes: []corev1.Volume{{Name: "repo", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: RepoClaim}}}},
		},
	}
	if _, err := cl.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("the repo's upload pod: %w", err)
	}
	defer func() {
		// Deleted also when the upload failed: the claim stays for the
		// sandbox, or goes with its namespace.
		_ = cl.CoreV1().Pods(ns).Delete(context.WithoutCancel(ctx), uploadPod, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}()
	if err := waitRunning(ctx, cl, ns, uploadPod); err != nil {
		return err
	}
	req := cl.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(uploadPod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "upload", Command: []string{"tar", "-x", "-C", "/repo"}, Stdin: true, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	stream := rest.CopyConfig(cfg)
	stream.Timeout = 0 // the upload takes as long as the repo's size needs; ctx bounds it
	exec, err := newExecutor(stream, req.URL())
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	if err := exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: tarStream, Stdout: io.Discard, Stderr: &stderr}); err != nil {
		return fmt.Errorf("uploading the repo: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// newExecutor talks WebSocket to the exec endpoint, falling back to SPDY
// for API servers before 1.30.
func newExecutor(cfg *rest.Config, u *url.URL) (remotecommand.Executor, error) {
	ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
	if err != nil {
		return nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", u)
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// waitRunning waits until pod name runs, failing at once on a pod that
// cannot (an image it cannot pull, a claim that cannot bind in time).
func waitRunning(ctx context.Context, cl kubernetes.Interface, ns, name string) error {
	for {
		p, err := cl.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("pod %s: %w", name, err)
		}
		if err == nil {
			if p.Status.Phase == corev1.PodRunning {
				return nil
			}
			if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
				return fmt.Errorf("pod %s ended (%s) before its upload", name, p.Status.Phase)
			}
			for _, cs := range p.Status.ContainerStatuses {
				if w := cs.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff" || w.Reason == "ErrImageNeverPull" || w.Reason == "InvalidImageName") {
					return fmt.Errorf("pod %s: %s: %s (the cluster block's helper_image)", name, w.Reason, w.Message)
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pod %s is not running: %w", name, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}
