package composessh

import (
	"context"
	"errors"
	"strings"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// composeFor is the compose command for sb's stops, starts and teardown:
// the configured one, else the one sb's record says its create ran (a
// sandbox created with compose v1 is stopped with v1), else detected. An
// apply walk is a provider process of its own: a stop or a destroy there
// would otherwise wait for a detection first. recorded says it is the
// record's, which the host may no longer have (withCompose).
func (e *Extension) composeFor(ctx context.Context, h *hosts.Host, sb *backends.Sandbox) (compose []string, recorded bool, err error) {
	if e.ComposeCommand == "" && len(sb.ComposeCommand) > 0 {
		return sb.ComposeCommand, true, nil
	}
	compose, err = e.compose(ctx, h)
	return compose, false, err
}

// withCompose runs do with sb's compose command (composeFor), and again
// with the detected one when the record's is not found on the host
// (status 127: compose was moved or replaced since the create).
func (e *Extension) withCompose(ctx context.Context, h *hosts.Host, sb *backends.Sandbox, do func(compose []string) error) error {
	compose, recorded, err := e.composeFor(ctx, h, sb)
	if err != nil {
		return err
	}
	err = do(compose)
	var ce *hosts.CommandError
	if !recorded || !errors.As(err, &ce) || ce.ExitCode != 127 {
		return err
	}
	if compose, err = e.compose(ctx, h); err != nil {
		return err
	}
	return do(compose)
}

// engine is the container CLI matching the compose command.
func engine(compose []string) string {
	if strings.HasPrefix(compose[0], "podman") {
		return "podman"
	}
	return "docker"
}

// inWorkspace builds `cd WS && <compose> -p PROJECT -f FILE [-f OVERRIDE] args...`.
func inWorkspace(sb *backends.Sandbox, compose []string, args ...string) string {
	argv := append(append([]string{}, compose...), "-p", sb.ComposeProject, "-f", backends.ComposeFileOf(sb))
	if sb.NetworkOverride {
		argv = append(argv, "-f", overrideFor(sb))
	}
	return "cd -- " + hosts.Quote(sb.WorkspaceDir) + " && " + hosts.Command(append(argv, args...)...)
}
