package agent

import (
	"context"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// Manifests are the raw manifests of every snapshot on h, read with one
// read-only command (as List reads them), for a caller that answers many
// Gets at once: each is verified only when asked for (Manifests.Get), so
// one bad manifest spoils only its own snapshot.
type Manifests struct {
	h     *hosts.Host
	files map[string][]byte
}

// ReadManifests reads every manifest of h's store in one command.
func (c *Client) ReadManifests(ctx context.Context, h *hosts.Host) (*Manifests, error) {
	files, err := readSnapshotFiles(ctx, h, nil)
	if err != nil {
		return nil, err
	}
	return &Manifests{h: h, files: files}, nil
}

// Get is Client.Get answered from the manifests read.
func (m *Manifests) Get(id string) (checkpoint.Summary, error) {
	if err := checkpoint.CheckID(id); err != nil {
		return checkpoint.Summary{}, err
	}
	man, err := manifestOf(m.h, id, m.files)
	if err != nil {
		return checkpoint.Summary{}, err
	}
	return man.Summary(), nil
}
