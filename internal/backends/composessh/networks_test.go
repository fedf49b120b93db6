package composessh

import (
	"net/netip"
	"reflect"
	"testing"
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
	_, networks, err := loadProject(repo, "docker-compose.yml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"back", "default", "front"}; !reflect.DeepEqual(networks, want) {
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
