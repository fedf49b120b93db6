package composefile

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writeRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The rendered file, loaded again as compose would load it on the host,
// runs beside copies of itself: scoped names, an alias for the old
// container name, no fixed host ports; the rest is the file as written.
func TestIsolateRendersACopyThatCannotCollide(t *testing.T) {
	repo := writeRepo(t, map[string]string{
		".env": "WEB_PORT=8080\n",
		"compose.yaml": `x-common: &common
  image: busybox
  ports: ["9000:9000"]
services:
  web:
    image: busybox
    container_name: web
    ports: ["${WEB_PORT}:80", "127.0.0.1:8443:443", "53:53/udp", "7000"]
    networks: [front, back]
    volumes: ["./data:/data"]
  db:
    <<: *common
    container_name: shared-db
    networks:
      back:
        aliases: [database]
  worker:
    image: busybox
    command: ["sh", "-c", "echo $$HOME"]
    network_mode: "service:web"
networks:
  front: {}
  back:
    name: backend-net
  outside:
    external: true
    name: shared-outside
volumes:
  data:
    name: pgdata
`,
	})
	l, err := LoadFile(repo, "compose.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := l.Isolate(IsolateOptions{Project: "sbx-abc", FreePorts: true, PublishAddress: "10.0.0.5"})
	if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	// The rest is the file as written: relative paths, escapes, extensions.
	for _, kept := range []string{"./data:/data", "echo $$HOME", "x-common"} {
		if !strings.Contains(text, kept) {
			t.Errorf("rendering lost %q:\n%s", kept, text)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, ".sandboxer-compose.yaml"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := LoadFile(repo, ".sandboxer-compose.yaml", nil)
	if err != nil {
		t.Fatalf("the rendering does not load: %v\n%s", err, text)
	}
	p := r.Project
	web, db := p.Services["web"], p.Services["db"]
	if web.ContainerName != "sbx-abc-web" || db.ContainerName != "sbx-abc-shared-db" {
		t.Errorf("container names %q, %q", web.ContainerName, db.ContainerName)
	}
	for net, cfg := range web.Networks {
		if cfg == nil || !reflect.DeepEqual(cfg.Aliases, []string{"web"}) {
			t.Errorf("web on %s: %+v, want alias web", net, cfg)
		}
	}
	if len(web.Networks) != 2 {
		t.Errorf("web networks %v", web.Networks)
	}
	if cfg := db.Networks["back"]; cfg == nil || !reflect.DeepEqual(cfg.Aliases, []string{"database", "shared-db"}) {
		t.Errorf("db on back: %+v", cfg)
	}
	type port struct {
		ip, pub, proto string
		target         uint32
	}
	var got []port
	for _, s := range []string{"web", "db"} {
		for _, pc := range p.Services[s].Ports {
			got = append(got, port{pc.HostIP, pc.Published, pc.Protocol, pc.Target})
		}
	}
	want := []port{{"10.0.0.5", "", "tcp", 80}, {"127.0.0.1", "", "tcp", 443}, {"10.0.0.5", "", "udp", 53}, {"10.0.0.5", "", "tcp", 7000}, {"10.0.0.5", "", "tcp", 9000}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ports\n got %+v\nwant %+v", got, want)
	}
	// No name of their own left: compose names them after the project (-p).
	if p.Networks["back"].Name != p.Name+"_back" || p.Volumes["data"].Name != p.Name+"_data" {
		t.Errorf("names %q, %q", p.Networks["back"].Name, p.Volumes["data"].Name)
	}
	if p.Networks["outside"].Name != "shared-outside" {
		t.Errorf("external network renamed: %q", p.Networks["outside"].Name)
	}
	if p.Services["worker"].NetworkMode != "service:web" {
		t.Errorf("worker network_mode %q", p.Services["worker"].NetworkMode)
	}
	composeAccepts(t, repo, ".sandboxer-compose.yaml")
}

// As written, the ports stay; names are scoped all the same.
func TestIsolateAsWrittenKeepsPorts(t *testing.T) {
	repo := writeRepo(t, map[string]string{"compose.yaml": "services:\n  web:\n    image: busybox\n    ports: [\"8080:80\"]\n"})
	l, err := LoadFile(repo, "compose.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := l.Isolate(IsolateOptions{Project: "sbx-abc"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"8080:80"`) {
		t.Fatalf("ports changed:\n%s", out)
	}
}

// A restore's project comes from `compose config`, which prints every
// network and volume name, the project's own already scoped.
func TestIsolateResolvedProjectKeepsScopedNames(t *testing.T) {
	raw := []byte(`name: sbx-abc
services:
  web:
    image: busybox
    container_name: web
    networks:
      default: null
    ports:
      - mode: ingress
        target: 80
        published: "8080"
        protocol: tcp
networks:
  default:
    name: sbx-abc_default
volumes:
  data:
    name: pgdata
`)
	l, err := LoadResolved("compose config", raw)
	if err != nil {
		t.Fatal(err)
	}
	out, err := l.Isolate(IsolateOptions{Project: "sbx-abc", FreePorts: true})
	if err != nil {
		t.Fatal(err)
	}
	r, err := LoadResolved("rendered", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if n := r.Project.Networks["default"].Name; n != r.Project.Name+"_default" {
		t.Errorf("default network %q", n)
	}
	if n := r.Project.Volumes["data"].Name; n != r.Project.Name+"_data" {
		t.Errorf("volume %q", n)
	}
	if ps := r.Project.Services["web"].Ports; len(ps) != 1 || ps[0].Published != "" || ps[0].Target != 80 {
		t.Errorf("ports %+v", ps)
	}
}

// What the file as people write it does with YAML and compose features:
// anchors shared between services, a service that is an alias, names
// from merge keys, extends, container: references, external networks,
// per-network settings. Each rendering must load, and must isolate.
func TestIsolateYAMLAndComposeFeatures(t *testing.T) {
	repo := writeRepo(t, map[string]string{
		"base.yml": "services:\n  base:\n    image: busybox\n    ports: [\"18081:81\"]\n",
		"compose.yaml": `x-vol: &vol
  name: shared-data
x-svc: &svc
  image: busybox
  container_name: svc
  ports: ["18080:80"]
services:
  web:
    image: busybox
    container_name: web
    networks: &nets [front]
  worker:
    image: busybox
    networks: *nets
  aliased: *svc
  ext:
    extends: {file: base.yml, service: base}
    ports: ["18082:82"]
  sidecar:
    image: busybox
    network_mode: "container:web"
    volumes_from: ["container:web:ro"]
  mac:
    image: busybox
    container_name: mac
    networks:
      front:
        link_local_ips: ["169.254.8.8"]
      outside: {}
networks:
  front: {}
  outside:
    external: true
volumes:
  data: {<<: *vol}
  data2: *vol
`,
	})
	l, err := LoadFile(repo, "compose.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := l.Isolate(IsolateOptions{Project: "sbx-abc", FreePorts: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, ".sandboxer-compose.yml"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := LoadFile(repo, ".sandboxer-compose.yml", nil)
	if err != nil {
		t.Fatalf("the rendering does not load: %v\n%s", err, out)
	}
	p := r.Project
	if n := p.Services["aliased"].ContainerName; n != "sbx-abc-svc" {
		t.Errorf("aliased service's container name %q", n)
	}
	if ps := p.Services["aliased"].Ports; len(ps) != 1 || ps[0].Published != "" {
		t.Errorf("aliased service's ports %+v", ps)
	}
	if nets := p.Services["worker"].Networks; len(nets) != 1 || nets["front"] != nil && len(nets["front"].Aliases) > 0 {
		t.Errorf("worker's networks changed with web's: %+v", nets)
	}
	// extends: compose adds the base's ports to the service's own, so both stay.
	if ps := p.Services["ext"].Ports; len(ps) != 2 {
		t.Errorf("ext ports %+v", ps)
	}
	if m := p.Services["sidecar"].NetworkMode; m != "container:sbx-abc-web" {
		t.Errorf("sidecar network_mode %q", m)
	}
	if vf := p.Services["sidecar"].VolumesFrom; len(vf) != 1 || vf[0] != "container:sbx-abc-web:ro" {
		t.Errorf("sidecar volumes_from %v", vf)
	}
	mac := p.Services["mac"].Networks
	if mac["front"] == nil || !reflect.DeepEqual(mac["front"].LinkLocalIPs, []string{"169.254.8.8"}) || !reflect.DeepEqual(mac["front"].Aliases, []string{"mac"}) {
		t.Errorf("mac on front: %+v", mac["front"])
	}
	if mac["outside"] != nil && len(mac["outside"].Aliases) > 0 {
		t.Errorf("an alias on an external network: %+v", mac["outside"])
	}
	if p.Volumes["data"].Name != p.Name+"_data" || p.Volumes["data2"].Name != p.Name+"_data2" {
		t.Errorf("volume names %q, %q", p.Volumes["data"].Name, p.Volumes["data2"].Name)
	}
	composeAccepts(t, repo, ".sandboxer-compose.yml")
}

// composeAccepts checks a rendering with the compose CLIs on this machine
// (v1 and v2 read files differently from compose-go); `config` needs no
// engine.
func composeAccepts(t *testing.T, dir, file string) {
	t.Helper()
	for _, argv := range [][]string{{"docker-compose"}, {"docker", "compose"}} {
		if _, err := exec.LookPath(argv[0]); err != nil {
			if os.Getenv("SANDBOXER_REQUIRE_HARNESS") != "" {
				t.Fatalf("%s not found", argv[0])
			}
			continue
		}
		cmd := exec.Command(argv[0], append(argv[1:], "-p", "sbx-abc", "-f", file, "config", "-q")...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			if argv[0] == "docker" && strings.Contains(string(out), "is not a docker command") && os.Getenv("SANDBOXER_REQUIRE_HARNESS") == "" {
				continue
			}
			t.Errorf("%v refuses the rendering: %v\n%s", argv, err, out)
		}
	}
}
