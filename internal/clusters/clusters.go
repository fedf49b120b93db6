// Package clusters connects to Kubernetes clusters, as internal/hosts
// connects to SSH hosts: one client per cluster per provider process,
// with credentials as kubectl reads them from a kubeconfig (exec plugins
// included). What runs on a cluster is the extensions' business.
package clusters

import (
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Config is a provider's cluster block.
type Config struct {
	Name           string
	KubeconfigFile string // "" is kubectl's: $KUBECONFIG, else ~/.kube/config
	Context        string // "" is the kubeconfig's current context
}

// Cluster is a connected cluster.
type Cluster struct {
	Name   string
	Client kubernetes.Interface
	// REST is the client's configuration, for the streams (exec, port
	// forwards) the typed client does not carry.
	REST *rest.Config
}

// requestTimeout bounds each API request; waits are bounded by their
// callers' contexts.
const requestTimeout = 30 * time.Second

// Connect builds a client from cfg's kubeconfig. It sends nothing: the
// first request dials (a plan that reads no cluster opens no connection).
func Connect(cfg Config) (*Cluster, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if cfg.KubeconfigFile != "" {
		rules.ExplicitPath = cfg.KubeconfigFile
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: cfg.Context}
	cfgREST, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("cluster %q: kubeconfig: %w", cfg.Name, err)
	}
	cfgREST.Timeout = requestTimeout
	cfgREST.UserAgent = "terraform-provider-sandboxer"
	client, err := kubernetes.NewForConfig(cfgREST)
	if err != nil {
		return nil, fmt.Errorf("cluster %q: %w", cfg.Name, err)
	}
	return &Cluster{Name: cfg.Name, Client: client, REST: cfgREST}, nil
}
