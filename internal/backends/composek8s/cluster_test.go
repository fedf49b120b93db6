package composek8s_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/composek8s"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// A stack with a one-shot init, a service with a healthcheck, and a web
// service depending on both, published: on a real cluster it comes up in
// its order, is ready, answers at its endpoint, reaches its dependency by
// name, and its teardown leaves nothing of it.
func TestStackRunsOnACluster(t *testing.T) {
	cl := testharness.StartedCluster(t)
	img := testharness.Image(t)
	l := load(t, map[string]string{"compose.yaml": `
services:
  init:
    image: ` + img + `
    pull_policy: never
    restart: "no"
    command: ["sh", "-c", "echo migrated"]
  db:
    image: ` + img + `
    pull_policy: never
    command: ["sh", "-c", "mkdir -p /www && echo db-answer > /www/index.html && touch /tmp/ok && exec httpd -f -p 5432 -h /www"]
    healthcheck:
      test: ["CMD", "test", "-f", "/tmp/ok"]
      interval: 1s
    stop_grace_period: 1s
  web:
    image: ` + img + `
    pull_policy: never
    # db by its name, on a port it never declared (as in compose), retried
    # as a client should: the network plugin admits a new pod to the
    # policies that let it in a moment after it starts. busybox httpd
    # ignores SIGTERM, hence the short grace periods.
    command: ["sh", "-c", "cp /repo-site/index.html /data/ && for i in 1 2 3 4 5 6 7 8 9 10; do printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 5 db 5432 | tail -n 1 > /data/db.txt; [ -s /data/db.txt ] && break; sleep 1; done; exec httpd -f -p 8080 -h /data"]
    stop_grace_period: 1s
    ports: ["8080"]
    volumes:
      - ./site:/repo-site
      - data:/data
    depends_on:
      init:
        condition: service_completed_successfully
      db:
        condition: service_healthy
volumes:
  data: {}
`, "site/index.html": "hello from the repo\n"})
	o := opts()
	o.ID = backends.NewID()
	o.StorageClass = cl.StorageClass
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
		_ = composek8s.Teardown(ctx, cl.Client, ns) // best effort: the test's own teardown checks it
	})

	if err := composek8s.Create(ctx, cl.Cluster, objs, l.Repo, img); err != nil {
		t.Fatal(err)
	}
	st, err := composek8s.WaitReady(ctx, cl.Client, objs)
	if err != nil {
		t.Fatalf("not ready: %v (%s)", err, backends.Describe(st.Services))
	}
	if got := backends.Describe(st.Services); got != "init=completed, db=running, web=running" && got != "db=running, init=completed, web=running" {
		t.Errorf("services %s", got)
	}
	eps, err := composek8s.Endpoints(ctx, cl.Client, objs, cl.NodeAddress)
	if err != nil {
		t.Fatal(err)
	}
	if err := composek8s.WaitPublished(ctx, eps); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + eps["web:8080"] + "/")
	if err != nil {
		t.Fatalf("endpoint %s: %v", eps["web:8080"], err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if string(body) != "hello from the repo\n" {
		t.Errorf("web answered %q", body)
	}
	resp, err = http.Get("http://" + eps["web:8080"] + "/db.txt")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if string(body) != "db-answer\n" {
		t.Errorf("web read %q from db by its name, want db's answer", body)
	}

	// Day two through the API: a command's output, error and exit code,
	// a working directory; one-shot logs.
	var out, errOut bytes.Buffer
	res, err := composek8s.Exec(ctx, cl.Cluster, objs, backends.ExecRequest{Service: "web",
		Command: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}, Stdout: &out, Stderr: &errOut})
	if err != nil || res.ExitCode != 3 || out.String() != "out\n" || errOut.String() != "err\n" {
		t.Errorf("exec: %+v %v, stdout %q, stderr %q", res, err, out.String(), errOut.String())
	}
	out.Reset()
	errOut.Reset()
	if res, err := composek8s.Exec(ctx, cl.Cluster, objs, backends.ExecRequest{Service: "web", Command: []string{"pwd"}, Workdir: "/data", Stdout: &out, Stderr: &errOut}); err != nil || res.ExitCode != 0 || out.String() != "/data\n" {
		t.Errorf("exec in /data: %+v %v %q %q", res, err, out.String(), errOut.String())
	}
	out.Reset()
	if res, err := composek8s.Exec(ctx, cl.Cluster, objs, backends.ExecRequest{Service: "web", Command: []string{"pwd"}, Stdout: &out}); err != nil || res.ExitCode != 0 || out.String() != "/\n" {
		t.Errorf("exec, stderr merged: %+v %v %q", res, err, out.String())
	}
	// A command that outlives its context is killed in the container.
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, err = composek8s.Exec(short, cl.Cluster, objs, backends.ExecRequest{Service: "web", Command: []string{"sleep", "301"}})
	cancel()
	if err == nil {
		t.Fatal("a command past its deadline returned no error")
	}
	out.Reset()
	// The pattern does not match the grep's own command line.
	if _, err := composek8s.Exec(ctx, cl.Cluster, objs, backends.ExecRequest{Service: "web", Stdout: &out,
		Command: []string{"sh", "-c", `cat /proc/[0-9]*/cmdline | tr '\0' ' ' | grep -c 'sleep 30[1]' || true`}}); err != nil || out.String() != "0\n" {
		t.Errorf("after the timeout, processes of `sleep 301` in web: %q (%v), want 0", out.String(), err)
	}
	if _, err := composek8s.Exec(ctx, cl.Cluster, objs, backends.ExecRequest{Service: "init", Command: []string{"true"}}); !errors.Is(err, backends.ErrServiceNotRunning) {
		t.Errorf("exec in a completed job: %v, want %v", err, backends.ErrServiceNotRunning)
	}
	if _, err := composek8s.Exec(ctx, cl.Cluster, objs, backends.ExecRequest{Service: "web", Command: []string{"true"}, Env: map[string]string{"TOKEN": "x"}}); err == nil {
		t.Error("exec with env ran: its values would be on the container's command line")
	}
	out.Reset()
	if err := composek8s.Logs(ctx, cl.Cluster, objs, []string{"init"}, 0, 0, &out); err != nil || out.String() != "init | migrated\n" {
		t.Errorf("logs of init: %v %q", err, out.String())
	}

	// A tunnel to db, which publishes nothing, through the API server.
	fwd, err := composek8s.OpenForward(ctx, cl.Cluster, objs, "db", 5432, 0)
	if err != nil {
		t.Fatal(err)
	}
	resp, err = http.Get("http://" + fwd.Addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	fwd.Close()
	if string(body) != "db-answer\n" {
		t.Errorf("db through the tunnel answered %q", body)
	}

	began := time.Now()
	if err := composek8s.Teardown(ctx, cl.Client, ns); err != nil {
		t.Fatal(err)
	}
	t.Logf("teardown took %s", time.Since(began).Round(100*time.Millisecond))
	if _, err := cl.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s after teardown: %v", ns, err)
	}
	pvs, err := cl.Client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, pv := range pvs.Items {
		if ref := pv.Spec.ClaimRef; ref != nil && ref.Namespace == ns {
			t.Errorf("volume %s still bound to %s/%s (%s)", pv.Name, ns, ref.Name, pv.Status.Phase)
		}
	}
}

// A service that cannot start fails the wait at once, not at its
// timeout, naming the service, its pod and why.
func TestServiceThatCannotStartIsDiagnosed(t *testing.T) {
	cl := testharness.StartedCluster(t)
	l := load(t, map[string]string{"compose.yaml": `
services:
  app:
    image: sandboxer-absent:1
    pull_policy: never
`})
	o := opts()
	o.ID = backends.NewID()
	objs, err := composek8s.Convert(l, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		if err := composek8s.Teardown(context.Background(), cl.Client, objs.Namespace.Name); err != nil {
			t.Error(err)
		}
	})
	if err := composek8s.Create(ctx, cl.Cluster, objs, l.Repo, ""); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = composek8s.WaitReady(ctx, cl.Client, objs)
	if err == nil {
		t.Fatal("ready with an image the node does not have")
	}
	t.Logf("the diagnostic:\n%v", err)
	for _, want := range []string{"service app", "ErrImageNeverPull", "pod app-", "sandboxer-absent:1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
	if took := time.Since(start); took > time.Minute {
		t.Errorf("the wait took %s to fail", took)
	}
}

// Stopped, a sandbox runs no pod and keeps its volume; started again it
// is ready with the same data; a Deployment scaled or deleted out of band
// shows as drift.
func TestStopAndStartKeepTheVolume(t *testing.T) {
	cl := testharness.StartedCluster(t)
	img := testharness.Image(t)
	l := load(t, map[string]string{"compose.yaml": `
services:
  web:
    image: ` + img + `
    pull_policy: never
    # A token made once, on the volume; busybox httpd ignores SIGTERM.
    command: ["sh", "-c", "[ -f /data/token ] || cat /proc/sys/kernel/random/uuid > /data/token; exec httpd -f -p 8080 -h /data"]
    stop_grace_period: 1s
    ports: ["8080"]
    volumes: ["data:/data"]
volumes:
  data: {}
`})
	o := opts()
	o.ID = backends.NewID()
	o.StorageClass = cl.StorageClass
	objs, err := composek8s.Convert(l, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		if err := composek8s.Teardown(context.Background(), cl.Client, objs.Namespace.Name); err != nil {
			t.Error(err)
		}
	})
	token := func() string {
		t.Helper()
		if _, err := composek8s.WaitReady(ctx, cl.Client, objs); err != nil {
			t.Fatal(err)
		}
		eps, err := composek8s.Endpoints(ctx, cl.Client, objs, cl.NodeAddress)
		if err != nil {
			t.Fatal(err)
		}
		if err := composek8s.WaitPublished(ctx, eps); err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get("http://" + eps["web:8080"] + "/token")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		if len(b) < 32 {
			t.Fatalf("token %q", b)
		}
		return string(b)
	}
	if err := composek8s.Create(ctx, cl.Cluster, objs, l.Repo, ""); err != nil {
		t.Fatal(err)
	}
	first := token()

	st, err := composek8s.Stop(ctx, cl.Client, objs)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != backends.StatusStopped || backends.Describe(st.Services) != "web=exited" {
		t.Errorf("after the stop: %s (%s)", st.State, backends.Describe(st.Services))
	}
	pods, err := cl.Client.CoreV1().Pods(objs.Namespace.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Errorf("%d pods left after the stop", len(pods.Items))
	}
	claims, err := cl.Client.CoreV1().PersistentVolumeClaims(objs.Namespace.Name).List(ctx, metav1.ListOptions{})
	if err != nil || len(claims.Items) != 1 {
		t.Fatalf("claims after the stop: %v %v", claims, err)
	}

	if err := composek8s.Start(ctx, cl.Client, objs); err != nil {
		t.Fatal(err)
	}
	if again := token(); again != first {
		t.Errorf("the volume's token is %q after a start, was %q", again, first)
	}

	// Scaled out of band: drift, not ready.
	patch := []byte(`{"spec":{"replicas":2}}`)
	if _, err := cl.Client.AppsV1().Deployments(objs.Namespace.Name).Patch(ctx, "web", k8stypes.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	st, err = composek8s.Inspect(ctx, cl.Client, objs)
	if err != nil {
		t.Fatal(err)
	}
	if st.State == backends.StatusReady || backends.Describe(st.Services) != "web=scaled" {
		t.Errorf("scaled out of band: %s (%s)", st.State, backends.Describe(st.Services))
	}
	// Deleted out of band: missing.
	if err := cl.Client.AppsV1().Deployments(objs.Namespace.Name).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	st, err = composek8s.Inspect(ctx, cl.Client, objs)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != backends.StatusStopped || backends.Describe(st.Services) != "web=missing" {
		t.Errorf("deleted out of band: %s (%s)", st.State, backends.Describe(st.Services))
	}
}

// A storage class the cluster lacks is refused before anything is made.
func TestAbsentStorageClassMakesNothing(t *testing.T) {
	cl := testharness.StartedCluster(t)
	l := load(t, map[string]string{"compose.yaml": "services:\n  app:\n    image: busybox\n    volumes: [\"data:/data\"]\nvolumes:\n  data: {}\n"})
	o := opts()
	o.ID = backends.NewID()
	o.StorageClass = "absent-class"
	objs, err := composek8s.Convert(l, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	err = composek8s.Create(ctx, cl.Cluster, objs, l.Repo, "")
	if err == nil || !strings.Contains(err.Error(), `no storage class "absent-class"`) {
		t.Fatalf("want the class refused, got %v", err)
	}
	if _, err := cl.Client.CoreV1().Namespaces().Get(ctx, objs.Namespace.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s after a refused create: %v", objs.Namespace.Name, err)
	}
}

// A namespace that is there before a sandbox's create (another's, under
// the same name) fails the create, and is left as it was: the cleanup of
// a failed create deletes only what the create made.
func TestCreateLeavesAnotherNamespaceAlone(t *testing.T) {
	cl := testharness.StartedCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id := backends.NewID()
	c := &backends.Cluster{Cluster: cl.Cluster, NamespacePrefix: "sbx", StorageClass: cl.StorageClass, NodeAddress: cl.NodeAddress, HelperImage: testharness.Image(t)}
	ns := composek8s.Namespace(c.NamespacePrefix, id)
	if _, err := cl.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	repo := t.TempDir()
	if err := os.WriteFile(filepath.Join(repo, "compose.yaml"), []byte("services:\n  app:\n    image: "+testharness.Image(t)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := composek8s.New().Create(ctx, c, backends.Request{ID: id, Profile: &catalog.Profile{Name: "profile.compose-k8s"}, Inputs: map[string]string{"repo": repo}})
	if !errors.Is(err, composek8s.ErrNamespaceExists) {
		t.Fatalf("create into a namespace that was there: %v, want %v", err, composek8s.ErrNamespaceExists)
	}
	got, err := cl.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp != nil {
		t.Fatalf("the namespace that was there before the create: %v (deleting: %v)", err, got.DeletionTimestamp)
	}
}
