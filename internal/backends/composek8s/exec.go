package composek8s

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/clusters"
)

// Exec runs req.Command in the first running pod of req.Service (by name)
// through the API's exec endpoint, streaming its output to req.Stdout and
// req.Stderr. The API's exec takes no user and no environment: a request
// with either is refused (an environment on the command line would show
// its values to anyone who lists the container's processes). The command
// runs through the image's sh, which gives its processes the marker that
// a timeout's kill finds them by: when ctx ends first, every process of
// the command in the container is killed (backends.KillScript), as on a
// compose host.
func Exec(ctx context.Context, c *clusters.Cluster, o *Objects, req backends.ExecRequest) (backends.ExecResult, error) {
	if len(req.Command) == 0 {
		return backends.ExecResult{}, errors.New("the command is empty")
	}
	if req.User != "" || len(req.Env) > 0 {
		return backends.ExecResult{}, errors.New("a command on a cluster runs as its container's user, without env of its own: the API's exec takes neither (set them in the compose file)")
	}
	ns := o.Namespace.Name
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelService + "=" + req.Service})
	if err != nil {
		return backends.ExecResult{}, fmt.Errorf("listing the pods of service %s: %w", req.Service, err)
	}
	items := pods.Items
	slices.SortFunc(items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	i := slices.IndexFunc(items, func(p corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil })
	if i < 0 {
		return backends.ExecResult{}, fmt.Errorf("service %s: %w", req.Service, backends.ErrServiceNotRunning)
	}
	pod := items[i].Name
	// Through the image's sh: every process of the command inherits the
	// marker a timeout's kill finds them by (the exec endpoint sets no
	// environment), and a working directory is entered.
	token := newToken()
	script, args := `export `+backends.ExecMarker+`="$1"; shift; `, []string{token}
	if req.Workdir != "" {
		script, args = script+`cd "$1" || exit 126; shift; `, append(args, req.Workdir)
	}
	cmd := slices.Concat([]string{"sh", "-c", script + `exec "$@"`, "sh"}, args, req.Command)
	stdout, stderr := req.Stdout, req.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		// Merged as they come. Two distinct writers: given one writer for
		// both streams, the exec stream writes neither.
		m := &merged{w: stdout}
		stdout, stderr = &mergedStream{m}, &mergedStream{m}
	}
	err = stream(ctx, c, ns, pod, req.Service, cmd, stdout, stderr)
	var exit exec.CodeExitError
	switch {
	case errors.As(err, &exit):
		return backends.ExecResult{ExitCode: exit.ExitStatus(), Container: pod}, nil
	case err != nil && ctx.Err() != nil:
		// The stream ended with ctx; the command did not: kill it.
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		var killErr bytes.Buffer
		if kerr := stream(kctx, c, ns, pod, req.Service, []string{"sh", "-c", backends.KillScript, "sh", backends.ExecMarker + "=" + token}, io.Discard, &killErr); kerr != nil {
			return backends.ExecResult{}, fmt.Errorf("running a command in pod %s: %w; killing its processes failed, they may still run: %v %s", pod, err, kerr, strings.TrimSpace(killErr.String()))
		}
		return backends.ExecResult{}, fmt.Errorf("running a command in pod %s: %w", pod, err)
	case err != nil:
		return backends.ExecResult{}, fmt.Errorf("running a command in pod %s: %w", pod, err)
	}
	return backends.ExecResult{Container: pod}, nil
}

// stream runs cmd in container of pod through the exec endpoint, its
// output to stdout and stderr (two distinct writers).
func stream(ctx context.Context, c *clusters.Cluster, ns, pod, container string, cmd []string, stdout, stderr io.Writer) error {
	r := c.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	cfg := rest.CopyConfig(c.REST)
	cfg.Timeout = 0 // the command takes what it takes; ctx bounds it
	ex, err := newExecutor(cfg, r.URL())
	if err != nil {
		return err
	}
	return ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: stdout, Stderr: stderr})
}

// newToken is a fresh exec marker's value.
func newToken() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand does not fail on supported platforms
	return hex.EncodeToString(b)
}

// Logs writes the logs of the sandbox's services (all when services is
// empty) to out, each line prefixed with its service ("web | ..."),
// service by service and pod by pod; tail lines per container (0: all),
// since a duration ago (0: from the start).
func Logs(ctx context.Context, c *clusters.Cluster, o *Objects, services []string, tail int64, since time.Duration, out io.Writer) error {
	all := slices.Concat(o.Levels...)
	if len(services) == 0 {
		services = all
	}
	for _, svc := range services {
		if !slices.Contains(all, svc) {
			return fmt.Errorf("the sandbox has no service %q (it has %s)", svc, strings.Join(all, ", "))
		}
	}
	s, err := read(ctx, c.Client, o.Namespace.Name)
	if err != nil {
		return err
	}
	opts := &corev1.PodLogOptions{}
	if tail > 0 {
		opts.TailLines = &tail
	}
	if since > 0 {
		secs := int64(since.Seconds())
		opts.SinceSeconds = &secs
	}
	for _, svc := range services {
		pods := s.pods[svc]
		slices.SortFunc(pods, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
		for _, p := range pods {
			rc, err := c.Client.CoreV1().Pods(o.Namespace.Name).GetLogs(p.Name, opts).Stream(ctx)
			if err != nil {
				return fmt.Errorf("the logs of pod %s: %w", p.Name, err)
			}
			sc := bufio.NewScanner(rc)
			sc.Buffer(make([]byte, 64*1024), 1024*1024)
			for sc.Scan() {
				if _, err := fmt.Fprintf(out, "%s | %s\n", svc, sc.Text()); err != nil {
					_ = rc.Close() // the writer failed: that error is the one to report
					return err
				}
			}
			err = sc.Err()
			_ = rc.Close() // read to its end or failed: err says which
			if err != nil {
				return fmt.Errorf("the logs of pod %s: %w", p.Name, err)
			}
		}
	}
	return nil
}

// merged is one writer two streams write to, a write at a time.
type merged struct {
	mu sync.Mutex
	w  io.Writer
}

type mergedStream struct{ m *merged }

func (s *mergedStream) Write(p []byte) (int, error) {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	return s.m.w.Write(p)
}
