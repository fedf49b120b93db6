package composek8s_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/composek8s"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/composefile"
)

// load writes files (path → content) into a new repo and loads its
// compose.yaml as a plan does.
func load(t *testing.T, files map[string]string) *composefile.Loaded {
	t.Helper()
	repo := t.TempDir()
	for p, content := range files {
		full := filepath.Join(repo, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	repo, err := filepath.EvalSymlinks(repo)
	if err != nil {
		t.Fatal(err)
	}
	l, err := composefile.LoadFile(repo, "compose.yaml", map[string]string{"DB_PASSWORD": "s3cret-value"})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func opts() composek8s.Options {
	return composek8s.Options{ID: "0123456789ab", NamespacePrefix: "sbx", StorageClass: "local", FreePorts: true}
}

const webStack = `
services:
  db:
    image: postgres:16
    container_name: app-db
    environment:
      POSTGRES_PASSWORD: ${DB_PASSWORD}
      POSTGRES_DB: app
    healthcheck:
      test: ["CMD", "pg_isready", "-U", "postgres"]
      interval: 2s
      timeout: 1500ms
      retries: 10
    volumes:
      - data:/var/lib/postgresql/data
  migrate:
    image: app:1
    restart: "no"
    command: ["migrate", "up"]
    depends_on:
      db:
        condition: service_healthy
  web:
    image: app:1
    env_file: web.env
    environment:
      MODE: test
    ports:
      - "8080:80"
    expose:
      - "9000"
    volumes:
      - ./src:/app
    depends_on:
      db:
        condition: service_healthy
      migrate:
        condition: service_completed_successfully
    deploy:
      replicas: 2
      resources:
        limits:
          memory: 256M
          cpus: "0.5"
volumes:
  data: {}
`

// The stack people write: a database with a healthcheck, a migration run
// once, a web service with a published port and the repo's files.
func TestConvertsAWebStack(t *testing.T) {
	l := load(t, map[string]string{"compose.yaml": webStack, "web.env": "MODE=dev\nLEVEL=debug\n", "src/index.html": "hi"})
	o := opts()
	o.Sensitive = []string{"s3cret-value"}
	objs, err := composek8s.Convert(l, o)
	if err != nil {
		t.Fatal(err)
	}
	if objs.Namespace.Name != "sbx-0123456789ab" || objs.Namespace.Labels[composek8s.LabelSandbox] != "0123456789ab" {
		t.Errorf("namespace %s labels %v", objs.Namespace.Name, objs.Namespace.Labels)
	}
	if got := names(objs.Deployments); !slices.Equal(got, []string{"db", "web"}) {
		t.Errorf("deployments %v, want db and web", got)
	}
	if len(objs.Jobs) != 1 || objs.Jobs[0].Name != "migrate" || *objs.Jobs[0].Spec.BackoffLimit != 0 ||
		objs.Jobs[0].Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("jobs %+v, want migrate, run once", objs.Jobs)
	}
	if got := names(objs.Services); !slices.Equal(got, []string{"app-db", "db", "migrate", "published-web", "web"}) {
		t.Errorf("services %v", got)
	}
	for _, s := range objs.Services {
		switch s.Name {
		case "published-web":
			if s.Spec.Type != corev1.ServiceTypeNodePort || len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Port != 80 || s.Spec.Ports[0].NodePort != 0 {
				t.Errorf("published-web %+v, want a NodePort of port 80 the cluster picks", s.Spec)
			}
		case "web":
			if s.Spec.ClusterIP != corev1.ClusterIPNone || !s.Spec.PublishNotReadyAddresses || len(s.Spec.Ports) != 2 || s.Spec.Selector[composek8s.LabelService] != "web" {
				t.Errorf("web %+v, want headless, ports 80 and 9000, selecting web", s.Spec)
			}
		case "app-db":
			if s.Spec.ClusterIP != corev1.ClusterIPNone || s.Spec.Selector[composek8s.LabelService] != "db" {
				t.Errorf("app-db %+v, want headless, selecting db (its container_name resolves)", s.Spec)
			}
		}
	}
	if got := objs.Levels; len(got) != 3 || !slices.Equal(got[0], []string{"db"}) || !slices.Equal(got[1], []string{"migrate"}) || !slices.Equal(got[2], []string{"web"}) {
		t.Errorf("levels %v, want db, then migrate, then web", got)
	}
	if objs.Waits["web"]["migrate"] != "service_completed_successfully" || objs.Waits["web"]["db"] != "service_healthy" {
		t.Errorf("waits %v", objs.Waits)
	}
	if len(objs.Published) != 1 || objs.Published[0].Key != "web:80" || objs.Published[0].Service != "published-web" {
		t.Errorf("published %+v, want web:80", objs.Published)
	}
	if got := names(objs.Claims); !slices.Equal(got, []string{"data", "repo"}) {
		t.Errorf("claims %v, want data and repo", got)
	}
	for _, c := range objs.Claims {
		if *c.Spec.StorageClassName != "local" {
			t.Errorf("claim %s of class %v", c.Name, c.Spec.StorageClassName)
		}
	}

	db := objs.Deployments[0].Spec.Template.Spec.Containers[0]
	if p := db.ReadinessProbe; p == nil || !slices.Equal(p.Exec.Command, []string{"pg_isready", "-U", "postgres"}) || p.PeriodSeconds != 2 || p.TimeoutSeconds != 2 || p.FailureThreshold != 10 {
		t.Errorf("db's readiness probe %+v", db.ReadinessProbe)
	}
	web := objs.Deployments[1]
	if *web.Spec.Replicas != 2 {
		t.Errorf("web has %d replicas, want 2", *web.Spec.Replicas)
	}
	wc := web.Spec.Template.Spec.Containers[0]
	if m := wc.Resources.Limits.Memory().String(); m != "256Mi" {
		t.Errorf("web's memory limit %s", m)
	}
	if cpu := wc.Resources.Limits.Cpu().String(); cpu != "500m" {
		t.Errorf("web's cpu limit %s", cpu)
	}
	if len(wc.VolumeMounts) != 1 || wc.VolumeMounts[0].Name != "repo" || wc.VolumeMounts[0].SubPath != "src" || wc.VolumeMounts[0].MountPath != "/app" {
		t.Errorf("web's mounts %+v, want the repo's src at /app", wc.VolumeMounts)
	}

	// env_file under environment; the password only in a Secret.
	cms := map[string]*corev1.ConfigMap{}
	for _, c := range objs.ConfigMaps {
		cms[c.Name] = c
	}
	if d := cms["env-web"].Data; d["MODE"] != "test" || d["LEVEL"] != "debug" {
		t.Errorf("env-web %v, want MODE=test over the env_file's dev, and LEVEL", d)
	}
	if d := cms["env-db"].Data; d["POSTGRES_DB"] != "app" || d["POSTGRES_PASSWORD"] != "" {
		t.Errorf("env-db %v: the password must not be in a ConfigMap", d)
	}
	if len(objs.Secrets) != 1 || objs.Secrets[0].Name != "env-db" || objs.Secrets[0].StringData["POSTGRES_PASSWORD"] != "s3cret-value" {
		t.Errorf("secrets %+v, want env-db with the password", objs.Secrets)
	}
	if got := names(objs.NetworkPolicies); !slices.Equal(got, []string{"default-deny", "network-default", "published-web"}) {
		t.Errorf("network policies %v", got)
	}
}

// A file a cluster cannot run is refused at once, every problem named by
// its key and line, with what to write instead.
func TestRefusesWhatAClusterCannotHonourAllAtOnce(t *testing.T) {
	l := load(t, map[string]string{"compose.yaml": `
services:
  built:
    build: .
  host:
    image: busybox
    network_mode: host
  dev:
    image: busybox
    devices: ["/dev/fuse:/dev/fuse"]
  etc:
    image: busybox
    volumes: ["/etc:/host-etc"]
  named:
    image: busybox
    user: postgres
  limits:
    image: busybox
    ulimits:
      nofile: 1024
  ext:
    image: busybox
    volumes: ["shared:/data"]
  Bad_Name:
    image: busybox
volumes:
  shared:
    external: true
`, "Dockerfile": "FROM busybox\n"})
	objs, err := composek8s.Convert(l, opts())
	if err == nil || objs != nil {
		t.Fatalf("converted: %v", objs)
	}
	for _, want := range []string{
		`service "built" has ` + "`build`" + ` and no ` + "`image`",
		"`network_mode` cannot run on a cluster",
		"`devices` cannot run on a cluster",
		"bind mount of /etc",
		`user "postgres": a cluster takes numeric ids only`,
		"`ulimits` cannot run on a cluster",
		`volume "shared" is external`,
		`service "Bad_Name" cannot name a Kubernetes Service`,
		"line 7",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
}

// The same file gives the same objects, byte for byte: a plan and the
// apply after it agree.
func TestConversionIsDeterministic(t *testing.T) {
	files := map[string]string{"compose.yaml": webStack, "web.env": "A=1\nB=2\nC=3\n", "src/x": "x"}
	var first []byte
	for i := range 20 {
		objs, err := composek8s.Convert(load(t, files), opts())
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(objs)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = b
		} else if string(b) != string(first) {
			t.Fatalf("conversion %d differs from the first", i)
		}
	}
}

// published_ports = "as_written" asks for the file's port as the
// nodePort, which must be in the NodePort range.
func TestPortsAsWrittenAreNodePorts(t *testing.T) {
	o := opts()
	o.FreePorts = false
	l := load(t, map[string]string{"compose.yaml": `
services:
  ok:
    image: busybox
    ports: ["30080:80"]
  low:
    image: busybox
    ports: ["8080:80"]
`})
	_, err := composek8s.Convert(l, o)
	if err == nil || !strings.Contains(err.Error(), "published port 8080") || strings.Contains(err.Error(), "30080") {
		t.Fatalf("want only 8080 refused, got %v", err)
	}
	l = load(t, map[string]string{"compose.yaml": "services:\n  ok:\n    image: busybox\n    ports: [\"30080:80\"]\n"})
	objs, err := composek8s.Convert(l, o)
	if err != nil {
		t.Fatal(err)
	}
	if objs.Published[0].AsWrittenAt != 30080 {
		t.Errorf("published %+v, want nodePort 30080", objs.Published)
	}
}

// A key a cluster has no use for converts with a warning naming it.
func TestIgnoredKeysWarn(t *testing.T) {
	l := load(t, map[string]string{"compose.yaml": "services:\n  app:\n    image: busybox\n    init: true\n    stop_signal: SIGINT\n"})
	objs, err := composek8s.Convert(l, opts())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range objs.Warnings {
		got = append(got, w.Detail)
	}
	if len(got) != 2 || !strings.Contains(got[0], "`init` is ignored") || !strings.Contains(got[1], "`stop_signal` is ignored") {
		t.Errorf("warnings %q", got)
	}
}

func names[T interface{ GetName() string }](list []T) []string {
	out := make([]string, 0, len(list))
	for _, o := range list {
		out = append(out, o.GetName())
	}
	return out
}

// An env_file outside the repo is refused: the client reads no file of
// its own machine into a cluster.
func TestEnvFileOutsideTheRepoIsRefused(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "host.env")
	if err := os.WriteFile(outside, []byte("TOKEN=from-the-client\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l := load(t, map[string]string{"compose.yaml": "services:\n  app:\n    image: busybox\n    env_file: " + outside + "\n"})
	objs, err := composek8s.Convert(l, opts())
	if err == nil || !strings.Contains(err.Error(), "is outside the repo") {
		t.Fatalf("want the env_file refused, got %v (objects %v)", err, objs)
	}
}

// Volume names that are no Kubernetes names (db_data, DB-Data) convert to
// claims of their own: valid, distinct from a volume already so named
// (db-data), and the same at every conversion.
func TestVolumeNamesBecomeClaimNames(t *testing.T) {
	l := load(t, map[string]string{"compose.yaml": `services:
  db:
    image: postgres
    volumes: ["db_data:/a", "db-data:/b", "DB-Data:/c", "` + strings.Repeat("x", 70) + `:/d"]
volumes:
  db_data: {}
  db-data: {}
  DB-Data: {}
  ` + strings.Repeat("x", 70) + `: {}
`})
	o, err := composek8s.Convert(l, composek8s.Options{ID: "abc123abc123", NamespacePrefix: "sbx", FreePorts: true})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, pvc := range o.Claims {
		if errs := validation.IsDNS1123Label(pvc.Name); len(errs) > 0 || seen[pvc.Name] {
			t.Errorf("claim %q: %v (seen before: %v)", pvc.Name, errs, seen[pvc.Name])
		}
		seen[pvc.Name] = true
	}
	if len(seen) != 4 || !seen["db-data"] {
		t.Errorf("claims %v: want four, db-data among them as written", seen)
	}
	pod := o.Deployments[0].Spec.Template.Spec
	for _, v := range pod.Volumes {
		if errs := validation.IsDNS1123Label(v.Name); len(errs) > 0 {
			t.Errorf("pod volume %q: %v", v.Name, errs)
		}
		if v.PersistentVolumeClaim != nil && !seen[v.PersistentVolumeClaim.ClaimName] {
			t.Errorf("pod volume %q mounts claim %q, which the sandbox does not have", v.Name, v.PersistentVolumeClaim.ClaimName)
		}
	}
	again, _ := composek8s.Convert(l, composek8s.Options{ID: "abc123abc123", NamespacePrefix: "sbx", FreePorts: true})
	for i := range o.Claims {
		if o.Claims[i].Name != again.Claims[i].Name {
			t.Errorf("claim names differ between conversions: %s, %s", o.Claims[i].Name, again.Claims[i].Name)
		}
	}
}
