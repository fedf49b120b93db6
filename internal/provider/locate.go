package provider

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// Sandbox and snapshot ids do not name their host. When a configuration does
// not say (host = ...), the provider asks its hosts: the default host first,
// then the others in name order. Each host is one pooled connection.

// searchOrder lists the hosts to ask, default first.
func (d *providerData) searchOrder() []*hosts.Host {
	names := slices.DeleteFunc(slices.Sorted(maps.Keys(d.hosts)), func(n string) bool { return n == d.defaultHost })
	if d.defaultHost != "" {
		names = append([]string{d.defaultHost}, names...)
	}
	out := make([]*hosts.Host, len(names))
	for i, n := range names {
		out[i] = d.hosts[n]
	}
	return out
}

// locate returns the host named hint, or the first host where found says
// yes. found returns a not-found error (checked with notFound) for "no".
func (d *providerData) locate(what, hint string, found func(*hosts.Host) error, notFound error) (*hosts.Host, error) {
	if hint != "" {
		h, err := d.host(hint)
		if err != nil {
			return nil, err
		}
		if err := found(h); err != nil {
			if errors.Is(err, notFound) {
				return nil, fmt.Errorf("%s is not on host %q", what, hint)
			}
			return nil, err
		}
		return h, nil
	}
	var searched, failures []string
	for _, h := range d.searchOrder() {
		err := found(h)
		if err == nil {
			return h, nil
		}
		searched = append(searched, h.Host())
		if !errors.Is(err, notFound) {
			failures = append(failures, fmt.Sprintf("%s: %v", h.Host(), err))
		}
	}
	msg := fmt.Sprintf("%s is on none of the hosts searched (%s); set host to say where it is", what, strings.Join(searched, ", "))
	if len(d.clusters) > 0 {
		msg += fmt.Sprintf(" (clusters are not searched: for a sandbox on one, host is the cluster's name: %s)", strings.Join(slices.Sorted(maps.Keys(d.clusters)), ", "))
	}
	if len(failures) > 0 {
		msg += "\nhosts that could not be asked:\n" + strings.Join(failures, "\n")
	}
	return nil, errors.New(msg)
}

// locateSandbox finds the host holding sandbox id.
func (d *providerData) locateSandbox(ctx context.Context, id, hint string) (*hosts.Host, *backends.Sandbox, error) {
	var sb *backends.Sandbox
	h, err := d.locate(fmt.Sprintf("sandbox %s", id), hint, func(h *hosts.Host) error {
		var err error
		sb, err = d.registry.Sandbox(ctx, h, id)
		return err
	}, backends.ErrNotFound)
	return h, sb, err
}

// locateSnapshot finds the host holding snapshot id.
func (d *providerData) locateSnapshot(ctx context.Context, id, hint string) (*hosts.Host, checkpoint.Summary, error) {
	var s checkpoint.Summary
	h, err := d.locate(fmt.Sprintf("snapshot %s", id), hint, func(h *hosts.Host) error {
		var err error
		s, err = d.registry.GetSnapshot(ctx, h, id)
		return err
	}, backends.ErrSnapshotNotFound)
	return h, s, err
}
