package composek8s

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/clusters"
)

// Forward is a port of a service's pod forwarded to an address on this
// machine through the API server (the tunnel on a cluster): no NodePort
// needed, nothing listening beyond loopback.
type Forward struct {
	Addr string // "127.0.0.1:<port>"
	pf   *portforward.PortForwarder
}

// Close stops the forward.
func (f *Forward) Close() { f.pf.Close() }

// Address is where the forward listens.
func (f *Forward) Address() string { return f.Addr }

// OpenForward forwards port of the first running pod of service (by name)
// to 127.0.0.1:localPort (0: a free one).
func OpenForward(ctx context.Context, c *clusters.Cluster, o *Objects, service string, port, localPort int) (*Forward, error) {
	ns := o.Namespace.Name
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelService + "=" + service})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of service %s: %w", service, err)
	}
	items := pods.Items
	slices.SortFunc(items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	i := slices.IndexFunc(items, func(p corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil })
	if i < 0 {
		return nil, fmt.Errorf("service %s: %w", service, backends.ErrServiceNotRunning)
	}
	url := c.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(items[i].Name).SubResource("portforward").URL()
	stream := rest.CopyConfig(c.REST)
	stream.Timeout = 0 // a tunnel lives as long as its user needs it
	transport, upgrader, err := spdy.RoundTripperFor(stream)
	if err != nil {
		return nil, err
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, url)
	ready := make(chan struct{})
	var errOut bytes.Buffer
	pf, err := portforward.NewOnAddressesWithContext(context.WithoutCancel(ctx), dialer, []string{"127.0.0.1"},
		[]string{strconv.Itoa(localPort) + ":" + strconv.Itoa(port)}, ready, nil, &errOut)
	if err != nil {
		return nil, err
	}
	failed := make(chan error, 1)
	go func() { failed <- pf.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-failed:
		return nil, fmt.Errorf("forwarding port %d of pod %s: %v %s", port, items[i].Name, err, strings.TrimSpace(errOut.String()))
	case <-ctx.Done():
		pf.Close()
		return nil, ctx.Err()
	}
	ports, err := pf.GetPorts()
	if err != nil || len(ports) != 1 {
		pf.Close()
		return nil, fmt.Errorf("forwarding port %d of pod %s: %v", port, items[i].Name, err)
	}
	return &Forward{Addr: "127.0.0.1:" + strconv.Itoa(int(ports[0].Local)), pf: pf}, nil
}
