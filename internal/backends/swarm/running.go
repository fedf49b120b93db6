package swarm

import (
	"context"
	"fmt"
	"strconv"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

var _ backends.Stopper = (*Extension)(nil)

// StopServices scales every service of the stack to 0 replicas and waits
// until their tasks have stopped; the services, networks and volumes stay.
// (Stop, for an in-place restore, removes the services instead: the
// restored compose file deploys them again.)
func (e *Extension) StopServices(ctx context.Context, h *hosts.Host, sb *backends.Sandbox, pending *backends.Pending) (backends.Status, error) {
	if err := pending.Flush(ctx); err != nil {
		return backends.Status{}, err
	}
	args, err := scaleArgs(sb, true)
	if err != nil {
		return backends.Status{}, err
	}
	if err := h.Run(ctx, hosts.Command(append([]string{"docker", "service", "scale", "--detach=false"}, args...)...)+" >/dev/null", nil, nil); err != nil {
		return backends.Status{}, fmt.Errorf("unable to stop sandbox %s: docker service scale: %w", sb.ID, err)
	}
	return e.Inspect(ctx, h, sb)
}

// StartServices scales every service back to the replicas its compose
// file declares; WaitReady then waits for them.
func (e *Extension) StartServices(ctx context.Context, h *hosts.Host, sb *backends.Sandbox, pending *backends.Pending) error {
	if err := pending.Flush(ctx); err != nil {
		return err
	}
	args, err := scaleArgs(sb, false)
	if err != nil {
		return err
	}
	if err := h.Run(ctx, hosts.Command(append([]string{"docker", "service", "scale", "--detach=true"}, args...)...)+" >/dev/null", nil, nil); err != nil {
		return fmt.Errorf("unable to start sandbox %s: docker service scale: %w", sb.ID, err)
	}
	return nil
}

// scaleArgs are `docker service scale`'s SERVICE=REPLICAS arguments: 0
// for each service, or the replicas the record declares. A global service
// has no replicas to scale, so a stack with one cannot be stopped.
func scaleArgs(sb *backends.Sandbox, zero bool) ([]string, error) {
	var args []string
	for _, name := range sb.Services {
		n, ok := sb.Replicas[name]
		if !ok {
			return nil, fmt.Errorf("sandbox %s: service %q is global (or its record declares no replicas): swarm can only stop "+
				"replicated services, by scaling them to 0", sb.ID, name)
		}
		if zero {
			n = 0
		}
		args = append(args, StackName(sb.ID)+"_"+name+"="+strconv.Itoa(n))
	}
	return args, nil
}
