package backends

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/clusters"
)

// Sandboxes on Kubernetes clusters (ADR 0009). A cluster is no host: it
// runs no shell, and a sandbox's record lives in the sandbox's own
// namespace, so the lifecycle of a cluster's sandboxes is its extension's
// whole (ClusterExtension), not the registry's steps around an
// extension's.

// Validator is what every extension is at plan time, on a host or on a
// cluster: its catalog name, and the inputs it takes.
type Validator interface {
	// Name is the extension's catalog name, e.g. "ext.compose-ssh".
	Name() string
	// Validate checks a request without touching a host or a cluster.
	Validate(p *catalog.Profile, inputs map[string]string) error
}

// Cluster is a cluster block of the provider: where a cluster extension
// places sandboxes, a namespace each.
type Cluster struct {
	*clusters.Cluster
	NamespacePrefix string // a sandbox's namespace is <prefix>-<id>
	StorageClass    string // of the sandboxes' claims; "" is the cluster's default
	// NodeAddress is where clients reach the published ports (NodePorts).
	NodeAddress string
	// HelperImage runs the pod that uploads a repo's files into its claim:
	// any image with sh and tar that the nodes have.
	HelperImage string
}

// ClusterTunnel is an open tunnel to a service's pod: Addr listens on this
// machine's loopback until Close.
type ClusterTunnel interface {
	Address() string
	Close()
}

// ClusterExtension is an extension whose sandboxes live on a cluster.
// Every call reads what it needs from the cluster: Terraform state and the
// sandbox's namespace are the only records.
type ClusterExtension interface {
	Validator
	Planner
	// Create makes the sandbox and waits until it is ready (and its
	// published ports answer, with WaitForPorts). A failed create tears
	// down what it made; when that fails too, the error wraps
	// ErrCleanupFailed.
	Create(ctx context.Context, c *Cluster, req Request) (*Sandbox, Status, error)
	// Get reads a sandbox's record and its services; ErrNotFound when its
	// namespace or record is gone.
	Get(ctx context.Context, c *Cluster, id string) (*Sandbox, Status, error)
	// Update applies change to the record, then stops or starts the
	// services as desired says (a start waits until they are ready); an
	// empty desired does neither and returns no Status.
	Update(ctx context.Context, c *Cluster, id string, change func(*Sandbox), desired string) (*Sandbox, Status, error)
	// List reads every sandbox of the cluster's namespace prefix, with its
	// services (the list resource, `terraform query`).
	List(ctx context.Context, c *Cluster) ([]SandboxInfo, error)
	// Capacity is what pool placement weighs (placement.go): the
	// sandboxes of the cluster's prefix, and the memory and CPUs of its
	// Ready nodes, available being what pods have not requested yet (Load1
	// is the CPUs requested). Disk is not read.
	Capacity(ctx context.Context, c *Cluster) (Capacity, error)
	// Destroy deletes the sandbox and returns once nothing of it is left;
	// a sandbox already gone is success.
	Destroy(ctx context.Context, c *Cluster, id string) error
	Exec(ctx context.Context, c *Cluster, req ExecRequest) (ExecResult, error)
	Logs(ctx context.Context, c *Cluster, req LogsRequest) error
	OpenTunnel(ctx context.Context, c *Cluster, id, service string, port, localPort int) (ClusterTunnel, error)
}

// Validator returns the named extension, of hosts or of clusters.
func (r *Registry) Validator(name string) (Validator, error) {
	if e, ok := r.exts[name]; ok {
		return e, nil
	}
	if e, ok := r.clusterExts[name]; ok {
		return e, nil
	}
	names := slices.Sorted(maps.Keys(r.exts))
	names = append(names, slices.Sorted(maps.Keys(r.clusterExts))...)
	slices.Sort(names)
	return nil, fmt.Errorf("unknown extension %q; available: %s", name, strings.Join(names, ", "))
}

// OnCluster says whether the named extension's sandboxes live on clusters.
func (r *Registry) OnCluster(extension string) bool {
	_, ok := r.clusterExts[extension]
	return ok
}

// ClusterExtension returns the cluster extension of a cluster's sandboxes.
// A cluster runs the sandboxes of one extension, so an id alone (a
// destroy, an import) finds its way.
func (r *Registry) ClusterExtension() (ClusterExtension, error) {
	for _, name := range slices.Sorted(maps.Keys(r.clusterExts)) {
		return r.clusterExts[name], nil
	}
	return nil, errors.New("this provider has no extension for clusters")
}
