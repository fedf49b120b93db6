package composessh

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

func prefixes(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

func TestChooseSkipsWhatIsTaken(t *testing.T) {
	pool := netip.MustParsePrefix("10.213.0.0/24")
	taken := prefixes("10.213.0.0/27", "10.213.0.64/26", "172.18.0.0/16")
	got, err := choose(pool, 27, 3, taken)
	if err != nil {
		t.Fatal(err)
	}
	if want := prefixes("10.213.0.32/27", "10.213.0.128/27", "10.213.0.160/27"); !reflect.DeepEqual(got, want) {
		t.Fatalf("chose %v, want %v", got, want)
	}
	// A /24 holds 8 /27s; 3 are taken (one, and two inside the /26).
	if n := FreeNetworks(pool, taken); n != 5 {
		t.Fatalf("FreeNetworks = %d, want 5", n)
	}
	if _, err := choose(pool, 27, 6, taken); err == nil {
		t.Fatal("a full pool was not refused")
	}
}

func TestManagedNetworksLeaveOwnSubnetsAndExternalsAlone(t *testing.T) {
	repo := repoWith(t, `services:
  web:
    image: busybox
    networks: [front, back, fixed, shared]
  worker:
    image: busybox
  host:
    image: busybox
    network_mode: host
networks:
  front: {}
  back: {}
  fixed:
    ipam:
      config: [{subnet: 10.99.0.0/24}]
  shared:
    external: true
`, nil)
	st, err := loadProject(repo, "docker-compose.yml", nil, backends.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want, networks := []string{"back", "default", "front"}, st.networks; !reflect.DeepEqual(networks, want) {
		t.Fatalf("managed networks %v, want %v", networks, want)
	}
}

// The listing of subnets in use survives a network removed between `docker
// network ls` and `docker network inspect` (another sandbox's teardown),
// and still fails when the engine keeps failing. A shell function stands
// in for the engine: its inspect fails the first `fail` times.
func TestTakenScriptSurvivesANetworkRemovedMeanwhile(t *testing.T) {
	for _, c := range []struct {
		fail    int
		wantErr bool
	}{{fail: 1}, {fail: 2}, {fail: 3, wantErr: true}} {
		root := t.TempDir()
		fake := fmt.Sprintf(`docker() { case "$1 $2" in
"network ls") echo n1; echo n2 ;;
"network inspect")
  n=$(cat %[1]q 2>/dev/null || echo 0); n=$((n+1)); echo $n >%[1]q
  if [ $n -le %[2]d ]; then echo 10.0.1.0/24; echo "Error response from daemon: network n2 not found" >&2; exit 1; fi
  echo 10.0.1.0/24; echo 10.0.2.0/24 ;;
esac; }
`, filepath.Join(root, "inspections"), c.fail)
		h := &hosts.Host{Transport: &hosts.Local{Name: "local"}, RootDir: root, Local: true}
		out, err := hosts.Output(t.Context(), h, fake+takenScript(h, "docker"))
		if c.wantErr {
			if err == nil || !strings.Contains(err.Error(), "network n2 not found") {
				t.Errorf("inspect failing %d times: %v, want the engine's error", c.fail, err)
			}
			continue
		}
		if got, want := parseTaken(string(out)), prefixes("10.0.1.0/24", "10.0.2.0/24"); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("inspect failing %d times: %v %v, want %v", c.fail, got, err, want)
		}
	}
}

// The override's format and its readers agree: the listing of what is
// taken finds the subnets overrideFile wrote (once, though a docker
// network has one too; IPv4 only), and a reservation of one of them ends
// its command with reservedMeanwhile, writing and running nothing more.
func TestReservationsReadTheOverrides(t *testing.T) {
	h := &hosts.Host{Transport: &hosts.Local{Name: "local"}, RootDir: t.TempDir(), Local: true}
	dir := h.Path(".sandboxer", "networks")
	reserve := func(id string, subnets ...string) (hosts.Reply, error) {
		r := &reservation{dir: hosts.Quote(dir), lock: hosts.Quote(dir + ".lock"), file: dir + "/" + id + ".yml",
			override: overrideFile([]string{"default", "back"}, prefixes(subnets...))}
		return hosts.Ask(t.Context(), h, func(m hosts.Mark) string { return r.script(m) + "echo up" })
	}
	if reply, err := reserve("a", "10.213.0.0/27", "10.213.0.32/27"); err != nil || reply.Result != "" || string(reply.Head) != "up\n" {
		t.Fatalf("a free reservation: %q %v", reply, err)
	}
	engine := "engine() { case $2 in ls) echo n1 ;; inspect) printf '10.213.0.0/27\\n172.18.0.0/16\\nfe80::/64\\n\\n' ;; esac; }\n"
	out, err := hosts.Output(t.Context(), h, engine+takenScript(h, "engine"))
	if got, want := parseTaken(string(out)), prefixes("10.213.0.0/27", "10.213.0.32/27", "172.18.0.0/16"); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("taken: %v %v, want %v", got, err, want)
	}
	reply, err := reserve("b", "10.213.0.64/27", "10.213.0.32/27")
	if _, serr := os.Stat(dir + "/b.yml"); err != nil || reply.Result != reservedMeanwhile || len(reply.Head) != 0 || !os.IsNotExist(serr) {
		t.Fatalf("a colliding reservation: %q %v; its file: %v", reply, err, serr)
	}
}
