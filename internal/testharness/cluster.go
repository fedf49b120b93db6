package testharness

import (
	"testing"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/clusters"
)

// Cluster is the one-node Kubernetes cluster scripts/harness/cluster.sh
// stands up (its own containerd, the harness images imported, cluster
// DNS), skipping (or failing under CI) the test when it is not up.
type Cluster struct {
	*clusters.Cluster
	// NodeAddress is where the host reaches the node's NodePorts.
	NodeAddress string
	// StorageClass binds claims to the node's local volumes.
	StorageClass string
}

// StartedCluster connects to the harness cluster.
func StartedCluster(t testing.TB) *Cluster {
	t.Helper()
	Share(t)
	c, err := clusters.Connect(clusters.Config{Name: "harness", KubeconfigFile: Env(t, "SANDBOXER_TEST_KUBECONFIG")})
	if err != nil {
		t.Fatal(err)
	}
	return &Cluster{Cluster: c, NodeAddress: Env(t, "SANDBOXER_TEST_NODE_ADDRESS"), StorageClass: Env(t, "SANDBOXER_TEST_STORAGE_CLASS")}
}
