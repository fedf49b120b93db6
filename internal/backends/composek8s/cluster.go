package composek8s

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/compose-spec/compose-go/v2/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/clusters"
)

// pollInterval is how often a wait reads the namespace again: the API
// answers from the apiserver's cache, and one read lists every workload.
var pollInterval = 500 * time.Millisecond

// ErrNamespaceExists: the sandbox's namespace is there before its create,
// someone else's: the create makes nothing, and nothing may tear it down.
var ErrNamespaceExists = errors.New("exists already, and is not this sandbox's")

// Create makes the sandbox's objects: its namespace, then what its pods
// mount and resolve (the repo's files uploaded from repoDir with a helper
// pod of helperImage, when a service mounts them), then its workloads
// level by level, each level once the conditions its services'
// depends_on ask of the ones before hold. What it made before an error
// stays: the caller tears the namespace down (Teardown), as the registry
// does after every failed create.
func Create(ctx context.Context, c *clusters.Cluster, o *Objects, repoDir, helperImage string) error {
	cl, ns := c.Client, o.Namespace.Name
	// A class the cluster lacks would leave every claim pending, and the
	// wait would only time out: said now, before anything is made.
	for _, pvc := range o.Claims {
		if sc := pvc.Spec.StorageClassName; sc != nil && *sc != "" {
			if _, err := cl.StorageV1().StorageClasses().Get(ctx, *sc, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				return fmt.Errorf("cluster %q has no storage class %q (the cluster block's storage_class), which volume %q asks for", c.Name, *sc, pvc.Name)
			} else if err != nil {
				return fmt.Errorf("storage class %s: %w", *sc, err)
			}
			break
		}
	}
	if _, err := cl.CoreV1().Namespaces().Create(ctx, o.Namespace, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s: %w", ns, ErrNamespaceExists)
	} else if err != nil {
		return fmt.Errorf("namespace %s: %w", ns, err)
	}
	create := func(kind, name string, err error) error {
		if err != nil {
			return fmt.Errorf("%s %s/%s: %w", kind, ns, name, err)
		}
		return nil
	}
	opts := metav1.CreateOptions{}
	for _, x := range o.ConfigMaps {
		_, err := cl.CoreV1().ConfigMaps(ns).Create(ctx, x, opts)
		if err := create("ConfigMap", x.Name, err); err != nil {
			return err
		}
	}
	for _, x := range o.Secrets {
		_, err := cl.CoreV1().Secrets(ns).Create(ctx, x, opts)
		if err := create("Secret", x.Name, err); err != nil {
			return err
		}
	}
	for _, x := range o.Claims {
		_, err := cl.CoreV1().PersistentVolumeClaims(ns).Create(ctx, x, opts)
		if err := create("PersistentVolumeClaim", x.Name, err); err != nil {
			return err
		}
	}
	if find(o.Claims, RepoClaim) != nil {
		if err := uploadDir(ctx, c, ns, helperImage, repoDir); err != nil {
			return err
		}
	}
	for _, x := range o.Services {
		_, err := cl.CoreV1().Services(ns).Create(ctx, x, opts)
		if err := create("Service", x.Name, err); err != nil {
			return err
		}
	}
	for _, x := range o.NetworkPolicies {
		_, err := cl.NetworkingV1().NetworkPolicies(ns).Create(ctx, x, opts)
		if err := create("NetworkPolicy", x.Name, err); err != nil {
			return err
		}
	}
	return inOrder(ctx, cl, o, func(svc string) error {
		if d := find(o.Deployments, svc); d != nil {
			_, err := cl.AppsV1().Deployments(ns).Create(ctx, d, opts)
			if err := create("Deployment", svc, err); err != nil {
				return err
			}
		}
		if j := find(o.Jobs, svc); j != nil {
			_, err := cl.BatchV1().Jobs(ns).Create(ctx, j, opts)
			return create("Job", svc, err)
		}
		return nil
	})
}

// inOrder calls each for the services level by level, each level once
// what its services' depends_on ask of the levels before holds.
func inOrder(ctx context.Context, cl kubernetes.Interface, o *Objects, each func(svc string) error) error {
	for i, level := range o.Levels {
		if i > 0 {
			if err := waitFor(ctx, cl, o, level); err != nil {
				return err
			}
		}
		for _, svc := range level {
			if err := each(svc); err != nil {
				return err
			}
		}
	}
	return nil
}

func find[T interface{ GetName() string }](list []T, name string) T {
	var zero T
	for _, x := range list {
		if x.GetName() == name {
			return x
		}
	}
	return zero
}

// waitFor waits until the dependencies of the services of level meet
// the conditions their depends_on asks.
func waitFor(ctx context.Context, cl kubernetes.Interface, o *Objects, level []string) error {
	want := map[string]string{} // dependency → the strictest condition asked of it
	for _, svc := range level {
		for dep, cond := range o.Waits[svc] {
			if cond == types.ServiceConditionCompletedSuccessfully || want[dep] == "" ||
				(cond == types.ServiceConditionHealthy && want[dep] == types.ServiceConditionStarted) {
				want[dep] = cond
			}
		}
	}
	if len(want) == 0 {
		return nil
	}
	for {
		seen, err := read(ctx, cl, o.Namespace.Name)
		if err != nil {
			return err
		}
		var pending []string
		for _, dep := range slices.Sorted(maps.Keys(want)) {
			if err := seen.failed(dep); err != nil {
				return fmt.Errorf("service %s, which others depend on: %w", dep, err)
			}
			if !seen.meets(dep, want[dep]) {
				pending = append(pending, dep+" ("+want[dep]+")")
			}
		}
		if len(pending) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", strings.Join(pending, ", "), ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// pause waits pollInterval, or until ctx ends.
func pause(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(pollInterval):
		return nil
	}
}
