package backends

import (
	"reflect"
	"testing"
)

// A swarm manager's facts carry its nodes as `docker node ls` prints them.
func TestParseFactsSwarmNodes(t *testing.T) {
	f := parseFacts("nproc=2\nswarm_node=n1|Ready|Active|Leader\nswarm_node=n2|Down|Drain|\nswarm_node=broken\n")
	want := []SwarmNode{{Name: "n1", State: "ready", Availability: "active", Manager: "leader"}, {Name: "n2", State: "down", Availability: "drain"}}
	if f.CPUCount != 2 || !reflect.DeepEqual(f.SwarmNodes, want) {
		t.Fatalf("got %+v", f)
	}
	if f := parseFacts("nproc=2\n"); f.SwarmNodes != nil {
		t.Fatalf("a host outside a swarm lists nodes: %+v", f.SwarmNodes)
	}
}
