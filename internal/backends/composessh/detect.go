package composessh

import (
	"context"
	"fmt"
	"strings"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// noComposeCommand is compose's detection's result when the host has none.
const noComposeCommand = "no-compose-command"

// composePluginDirs are where the docker CLI looks for its plugins, in its
// order (after the user's own directory).
var composePluginDirs = []string{"/usr/local/lib/docker/cli-plugins", "/usr/local/libexec/docker/cli-plugins",
	"/usr/lib/docker/cli-plugins", "/usr/libexec/docker/cli-plugins"}

// detectedKey is the section of a detection's answer carrying the key of
// what it detected, when it was not the cache's.
const detectedKey = "compose-key"

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
//
// Each apply walk is a provider process of its own, and its detection
// three Go programs' starts (0.4-0.5 s before its first `compose up`): the
// answer is kept on the host (detectionCache), with the identity of every
// file it depends on, and taken from there while none of them changed.
func (e *Extension) compose(ctx context.Context, h *hosts.Host) ([]string, error) {
	if e.ComposeCommand != "" {
		return strings.Fields(e.ComposeCommand), nil
	}
	return e.detections.Do(ctx, h.Host(), func(ctx context.Context) ([]string, error) {
		reply, err := hosts.Ask(ctx, h, func(m hosts.Mark) string { return detectionScript(m, h) })
		if err != nil {
			return nil, err
		}
		return e.detected(h, reply)
	})
}

// detected reads detectionScript's answer: the compose command, a
// detection for the host to keep (cacheDetectionScript) when it was not
// the cache's.
func (e *Extension) detected(h *hosts.Host, reply hosts.Reply) ([]string, error) {
	if reply.Result == noComposeCommand {
		return nil, fmt.Errorf("host %q has no compose command (tried docker compose, docker-compose, podman-compose): set compose_command or SANDBOXER_COMPOSE_CMD", h.Host())
	}
	argv := strings.Fields(string(reply.Head))
	for _, s := range reply.Sections {
		if s.Kind == detectedKey {
			e.toCache.Store(h.Host(), strings.TrimRight(string(s.Body), "\n")+"\n"+strings.Join(argv, " ")+"\n")
		}
	}
	return argv, nil
}

// detectionCache is where a host keeps its last detection: the key lines
// (detectionScript's _sbx_k), then the compose command.
func detectionCache(h *hosts.Host) string { return h.Path(".sandboxer", "compose-command") }

// detectionScript prints the compose command: the cache's when its key is
// the files' as they are now, else detected, followed by the key
// (detectedKey) for the next create to keep; $_c holds it after. It writes
// nothing: a plan's reads may detect too (ADR 0002).
func detectionScript(m hosts.Mark, h *hosts.Host) string {
	dirs := `"${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins"`
	for _, d := range composePluginDirs {
		dirs += " " + hosts.Quote(d)
	}
	cache := hosts.Quote(detectionCache(h))
	return `_sbx_k=$(for _p in "$(command -v docker)" "$(command -v docker-compose)" "$(command -v podman-compose)"; do [ -z "$_p" ] || stat -L -c '%n %i %s %Y' -- "$_p" 2>/dev/null; done
for _d in ` + dirs + `; do stat -L -c '%n %i %s %Y' -- "$_d/docker-compose" 2>/dev/null; done
printf '%s|%s\n' "${DOCKER_CONFIG:-}" "$PATH")
if [ -f ` + cache + ` ] && [ "$(sed '$d' ` + cache + ` 2>/dev/null)" = "$_sbx_k" ] && _c=$(tail -n 1 ` + cache + `) && [ -n "$_c" ]; then
echo "$_c"
elif _v=$(docker compose version --short 2>/dev/null) || { _v=; docker compose version >/dev/null 2>&1; }; then
_c="docker compose"
for _d in ` + dirs + `; do
	case $_d in *[[:space:]]*) continue ;; esac
	if [ -n "$_v" ] && [ -x "$_d/docker-compose" ] && [ "$("$_d/docker-compose" version --short 2>/dev/null)" = "$_v" ]; then _c="$_d/docker-compose"; break; fi
done
echo "$_c"
` + m.Section(detectedKey, "") + `
printf '%s\n' "$_sbx_k"
elif command -v docker-compose >/dev/null 2>&1; then _c=docker-compose; echo "$_c"
elif command -v podman-compose >/dev/null 2>&1; then _c=podman-compose; echo "$_c"
else ` + m.Result(noComposeCommand) + "; fi"
}

// cacheDetectionScript keeps this process's detection on h for the
// provider processes after it (taken once; the create that takes it writes
// the cache in its own command, beside its record). Only a detection of
// compose v2 through the docker CLI is kept: it is the one that costs
// three program starts.
func (e *Extension) cacheDetectionScript(h *hosts.Host) string {
	v, ok := e.toCache.LoadAndDelete(h.Host())
	if !ok {
		return ""
	}
	content, _ := v.(string) // only strings are stored
	cache := hosts.Quote(detectionCache(h))
	return fmt.Sprintf("(umask 077 && _t=$(mktemp %s.XXXXXX) && printf '%%s' %s > \"$_t\" && mv -f -- \"$_t\" %s) 2>/dev/null || true\n",
		cache, hosts.Quote(content), cache)
}
