package composessh

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// noComposeCommand is compose's detection's result when the host has none.
const noComposeCommand = "no-compose-command"

// composePluginDirs are where the docker CLI looks for its plugins, in its
// order (after the user's own directory).
var composePluginDirs = []string{"/usr/local/lib/docker/cli-plugins", "/usr/local/libexec/docker/cli-plugins",
	"/usr/lib/docker/cli-plugins", "/usr/libexec/docker/cli-plugins"}

// compose returns the compose argv for a host, detecting it once per host.
// Callers that find it undetected share one detection: `docker compose
// version` starts the compose plugin (~0.25 s of CPU), and the creates of
// one apply all ask at once.
//
// Compose v2 is run as its plugin binary itself, which takes the same
// arguments: `docker compose` starts the docker CLI first, which then
// starts the plugin, and that start is most of a `compose stop`'s CPU
// when ten run at once on a small host. The binary is used only when it
// is the version `docker compose` runs (ADR 0008).
func (e *Extension) compose(ctx context.Context, h *hosts.Host) ([]string, error) {
	if e.ComposeCommand != "" {
		return strings.Fields(e.ComposeCommand), nil
	}
	return e.detections.Do(ctx, h.Host(), func(ctx context.Context) ([]string, error) {
		dirs := `"${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins"`
		for _, d := range composePluginDirs {
			dirs += " " + hosts.Quote(d)
		}
		reply, err := hosts.Ask(ctx, h, func(m hosts.Mark) string {
			return `if _v=$(docker compose version --short 2>/dev/null) || { _v=; docker compose version >/dev/null 2>&1; }; then
_c="docker compose"
for _d in ` + dirs + `; do
	case $_d in *[[:space:]]*) continue ;; esac
	if [ -n "$_v" ] && [ -x "$_d/docker-compose" ] && [ "$("$_d/docker-compose" version --short 2>/dev/null)" = "$_v" ]; then _c="$_d/docker-compose"; break; fi
done
echo "$_c"
elif command -v docker-compose >/dev/null 2>&1; then echo docker-compose
elif command -v podman-compose >/dev/null 2>&1; then echo podman-compose
else ` + m.Result(noComposeCommand) + "; fi"
		})
		if err != nil {
			return nil, err
		}
		if reply.Result == noComposeCommand {
			return nil, fmt.Errorf("host %q has no compose command (tried docker compose, docker-compose, podman-compose): set compose_command or SANDBOXER_COMPOSE_CMD", h.Host())
		}
		return strings.Fields(string(reply.Head)), nil
	})
}

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
