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

func TestParseTakenCountsASubnetOnce(t *testing.T) {
	// A reservation, then the same subnet as docker reports it, plus noise.
	got := parseTaken("10.213.0.0/27\n10.213.0.0/27\n172.18.0.0/16\nfe80::/64\n\n")
	if want := prefixes("10.213.0.0/27", "172.18.0.0/16"); !reflect.DeepEqual(got, want) {
		t.Fatalf("parseTaken = %v, want %v", got, want)
	}
}

// The listing of subnets in use survives a network removed between `docker
// network ls` and `docker network inspect` (another sandbox's teardown),
// and still fails when the engine keeps failing. A fake docker on PATH
// stands in for the engine: its inspect fails the first `fail` times.
func TestTakenScriptSurvivesANetworkRemovedMeanwhile(t *testing.T) {
	for _, c := range []struct {
		fail    int
		wantErr bool
	}{{fail: 1}, {fail: 2}, {fail: 3, wantErr: true}} {
		bin, root := t.TempDir(), t.TempDir()
		count := filepath.Join(bin, "inspections")
		fake := fmt.Sprintf(`#!/bin/sh
case "$1 $2" in
"network ls") echo n1; echo n2 ;;
"network inspect")
  n=$(cat %[1]q 2>/dev/null || echo 0); n=$((n+1)); echo $n >%[1]q
  if [ $n -le %[2]d ]; then echo 10.0.1.0/24; echo "Error response from daemon: network n2 not found" >&2; exit 1; fi
  echo 10.0.1.0/24; echo 10.0.2.0/24 ;;
esac
`, count, c.fail)
		if err := os.WriteFile(filepath.Join(bin, "docker"), []byte(fake), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
		h := &hosts.Host{Transport: &hosts.Local{Name: "local"}, RootDir: root, Local: true}
		out, err := hosts.Output(t.Context(), h, takenScript(h, "docker"))
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
