package composessh

import (
	"context"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

var _ backends.Execer = (*Extension)(nil)

// ExecEngine is the engine of the host's compose command.
func (e *Extension) ExecEngine(ctx context.Context, h *hosts.Host) (string, error) {
	compose, err := e.compose(ctx, h)
	if err != nil {
		return "", err
	}
	return engine(compose), nil
}

// ServiceFilters pick the containers compose made for the service in the
// sandbox's own project (v1 and v2 label them alike).
func (e *Extension) ServiceFilters(sb *backends.Sandbox, service string) []string {
	return []string{"label=" + projectLabel + "=" + sb.ComposeProject, "label=com.docker.compose.service=" + service}
}
