//go:build tools

// Package tools records the commands cluster.sh builds from this module, so
// `go mod tidy` keeps what they need in go.mod and go.sum. etcd is the
// version k8s.io/kubernetes v1.34.4 requires (and was tested with): v3.6.4.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
