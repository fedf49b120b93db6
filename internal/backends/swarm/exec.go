package swarm

import (
	"context"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

var _ backends.Execer = (*Extension)(nil)

// ExecEngine: swarm stacks run on docker.
func (e *Extension) ExecEngine(context.Context, *hosts.Host) (string, error) { return "docker", nil }

// ServiceFilters pick the service's task containers on the manager's node:
// a task on another node is out of the manager's engine's reach.
func (e *Extension) ServiceFilters(sb *backends.Sandbox, service string) []string {
	return []string{"label=com.docker.swarm.service.name=" + StackName(sb.ID) + "_" + service}
}
