package composek8s_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/composek8s"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// Compose networks as NetworkPolicies, enforced (the harness cluster runs
// kube-router's firewall): services reach the services they share a
// network with, not the others' unpublished ports; nothing outside the
// namespace reaches in; a published port is reached from outside the
// cluster.
func TestNetworksAreEnforced(t *testing.T) {
	cl := testharness.StartedCluster(t)
	img := testharness.Image(t)
	// Each serves its hostname; web also on 9090, which it does not
	// publish (busybox httpd without -f goes to the background).
	serve := func(port string) string {
		return `["sh", "-c", "mkdir -p /www && hostname > /www/index.html && httpd -p 9090 -h /www && exec httpd -f -p ` + port + ` -h /www"]`
	}
	l := load(t, map[string]string{"compose.yaml": `
services:
  web:
    image: ` + img + `
    command: ` + serve("8080") + `
    stop_grace_period: 1s
    ports: ["8080"]
    networks: [front]
  api:
    image: ` + img + `
    command: ` + serve("8081") + `
    stop_grace_period: 1s
    networks: [front, back]
  db:
    image: ` + img + `
    command: ` + serve("8082") + `
    stop_grace_period: 1s
    networks: [back]
networks:
  front: {}
  back: {}
`})
	o := opts()
	o.ID = backends.NewID()
	objs, err := composek8s.Convert(l, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns := objs.Namespace.Name
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_ = composek8s.Teardown(ctx, cl.Client, ns)
	})
	if err := composek8s.Create(ctx, cl.Cluster, objs, l.Repo, img); err != nil {
		t.Fatal(err)
	}
	if _, err := composek8s.WaitReady(ctx, cl.Client, objs); err != nil {
		t.Fatal(err)
	}

	// The network plugin admits a new pod to the policies a moment after
	// it starts: each check is asked again, for a few seconds, until it
	// sees what it wants; one that never does fails. A refused connection
	// is rejected at once; busybox's own wget -T crashes in the harness
	// image, hence timeout.
	fetch := func(from, url string, reached bool) string {
		want := map[bool]string{true: "reached", false: "refused"}[reached]
		var out bytes.Buffer
		res, err := composek8s.Exec(ctx, cl.Cluster, objs, backends.ExecRequest{Service: from, Stdout: &out,
			Command: []string{"sh", "-c", `for i in $(seq 20); do ` +
				`if timeout 5 wget -q -O- "$1" >/dev/null 2>&1; then got=reached; else got=refused; fi; ` +
				`[ "$got" = "$2" ] && break; sleep 0.5; done; echo "$got"`, "sh", url, want}})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("exec in %s: %+v %v", from, res, err)
		}
		return strings.TrimSpace(out.String())
	}
	for _, c := range []struct {
		from, url string
		reached   bool
	}{
		{"web", "http://api:8081/", true}, // front
		{"api", "http://db:8082/", true},  // back
		{"api", "http://web:8080/", true}, // front
		{"web", "http://db:8082/", false}, // no network in common
		{"db", "http://web:9090/", false}, // nor the other way
		{"db", "http://api:8081/", true},  // back
		// A published port is open to every source, as in compose, where
		// any container reaches it at the host's address.
		{"db", "http://web:8080/", true},
	} {
		if got := fetch(c.from, c.url, c.reached); (got == "reached") != c.reached {
			t.Errorf("%s -> %s: %s, want reached %v", c.from, c.url, got, c.reached)
		}
	}

	// From another namespace: nothing reaches in, not even a published
	// service's unpublished peer.
	outside := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "outside-" + o.ID}}
	if _, err := cl.Client.CoreV1().Namespaces().Create(ctx, outside, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cl.Client.CoreV1().Namespaces().Delete(context.Background(), outside.Name, metav1.DeleteOptions{})
	})
	zero := int64(0)
	probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: outside.Name},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: &zero,
			Containers: []corev1.Container{{Name: "probe", Image: img, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sh", "-c", "for u in http://api." + ns + ".svc.cluster.local:8081/ http://db." + ns + ".svc.cluster.local:8082/; do timeout 5 wget -q -O- $u >/dev/null 2>&1 && echo reached || echo refused; done"}}}}}
	if _, err := cl.Client.CoreV1().Pods(outside.Name).Create(ctx, probe, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		p, err := cl.Client.CoreV1().Pods(outside.Name).Get(ctx, "probe", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the probe pod did not finish: %s", p.Status.Phase)
		case <-time.After(500 * time.Millisecond):
		}
	}
	logs, err := cl.Client.CoreV1().Pods(outside.Name).GetLogs("probe", &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(logs)); strings.Join(got, " ") != "refused refused" {
		t.Errorf("from another namespace, api and db: %q, want both refused", logs)
	}

	// The published port, from this machine.
	eps, err := composek8s.Endpoints(ctx, cl.Client, objs, cl.NodeAddress)
	if err != nil {
		t.Fatal(err)
	}
	if err := composek8s.WaitPublished(ctx, eps); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + eps["web:8080"] + "/")
	if err != nil {
		t.Fatalf("the published port %s: %v", eps["web:8080"], err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if !strings.HasPrefix(string(body), "web-") {
		t.Errorf("the published port answered %q, want web's hostname", body)
	}
}
