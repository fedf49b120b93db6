package composessh

import (
	"context"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// CreateMarker is createMarker, for the tests of package composessh_test.
const CreateMarker = createMarker

// Compose is the extension's compose command for a host, detected once.
func (e *Extension) Compose(ctx context.Context, h *hosts.Host) ([]string, error) {
	return e.compose(ctx, h)
}
