package backends

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// reaperScript is the host-side reaper: POSIX sh, so it needs nothing on a
// host but what sandboxes already need, and runs with no Terraform around.
//
//go:embed reaper.sh
var reaperScript string

// ReaperSetting is a host block's `reaper` argument.
type ReaperSetting int

const (
	ReaperUnset ReaperSetting = iota // not set: an installed reaper is left alone
	ReaperOn                         // install (or update) it
	ReaperOff                        // remove it if installed
)

// SetReaper records what a host block says of its reaper; the first create
// on that host in this provider process installs or removes it accordingly.
// Called while the provider is configured, before any sandbox operation.
func (r *Registry) SetReaper(host string, s ReaperSetting) { r.reaperSettings[host] = s }

// ReaperPath is where a host's reaper is installed.
func ReaperPath(h *hosts.Host) string { return h.Path(".sandboxer", "bin", "reaper.sh") }

// InstallReaper installs (or updates: the script carries its version) the
// reaper for h's root directory, and a crontab entry running it every
// minute where the host has cron. Idempotent: one entry per root directory.
func InstallReaper(ctx context.Context, h *hosts.Host) error {
	abs, err := hosts.Output(ctx, h, fmt.Sprintf("mkdir -p -- %[1]s && cd -- %[1]s && pwd -P", hosts.Quote(h.RootDir)))
	if err != nil {
		return fmt.Errorf("unable to install the reaper on host %q: %w", h.Host(), err)
	}
	root := strings.TrimSuffix(string(abs), "\n")
	// cron ends a command at a newline and turns % into one: such a root
	// could not be written as one crontab line, and the line's marker
	// comment carries the root verbatim.
	if strings.ContainsAny(root, "\n\r%") {
		return fmt.Errorf("unable to install the reaper on host %q: root directory %q contains a newline or %%, which a crontab line cannot hold", h.Host(), root)
	}
	// Every piece of the root that reaches a shell is one hosts.Quote word.
	script := strings.Replace(reaperScript, "@ROOT@", hosts.Quote(root), 1)
	path := root + "/.sandboxer/bin/reaper.sh"
	if err := hosts.WriteFile(ctx, h, path, []byte(script), 0o700); err != nil {
		return fmt.Errorf("unable to install the reaper on host %q: %w", h.Host(), err)
	}
	line := fmt.Sprintf("* * * * * sh %s >> %s 2>&1 %s", hosts.Quote(path), hosts.Quote(root+"/.sandboxer/reaper.log"), reaperMarker(root))
	cron := fmt.Sprintf(`command -v crontab >/dev/null 2>&1 || exit 0
%s
{ crontab -l 2>/dev/null | %s; printf '%%s\n' %s; } | crontab -`, crontabLock, dropLineEndingWith(hosts.Quote(reaperMarker(root))), hosts.Quote(line))
	if err := h.Run(ctx, cron, nil, nil); err != nil {
		return fmt.Errorf("unable to install the reaper's crontab entry on host %q: %w", h.Host(), err)
	}
	return nil
}

// UninstallReaper removes the reaper of h's root directory and its crontab
// entry, leaving other crontab lines (other root directories' reapers
// included) as they are. Nothing installed is success.
func UninstallReaper(ctx context.Context, h *hosts.Host) error {
	// A root directory removed since leaves its crontab line behind, failing
	// every minute: the line is still removed, by the path as configured.
	root := hosts.Quote(h.RootDir)
	if !strings.HasPrefix(h.RootDir, "/") {
		root = `"$HOME"/` + root
	}
	script := fmt.Sprintf(`if cd -- %[1]s 2>/dev/null; then
	root=$(pwd -P)
	rm -f -- .sandboxer/bin/reaper.sh
else
	root=%[1]s
fi
command -v crontab >/dev/null 2>&1 || exit 0
%[3]s
crontab -l >/dev/null 2>&1 || exit 0
crontab -l | %[2]s | crontab -`, root, dropLineEndingWith(`"`+reaperMarker("")+`$root"`), crontabLock)
	if err := h.Run(ctx, script, nil, nil); err != nil {
		return fmt.Errorf("unable to remove the reaper from host %q: %w", h.Host(), err)
	}
	return nil
}

// crontabLock serialises the edits of the user's crontab: each reads the
// whole table and writes it back, so two at once (two root directories of
// one user, installed or removed by two applies) would lose a line. The
// lock is the home directory's own flock (held on fd 9 until the command
// ends), which creates nothing; a host without flock(1) edits unlocked.
const crontabLock = `if command -v flock >/dev/null 2>&1 && [ -r "${HOME:-/}" ]; then exec 9<"${HOME:-/}"; flock 9 || exit 1; fi`

// reaperMarker ends the crontab line of root's reaper.
func reaperMarker(root string) string { return "# sandboxer-reaper " + root }

// endsWithM is an awk condition: the line ends with the environment
// variable M. Matching the end exactly matters: a substring match would
// also take the line of a root directory whose path merely starts with
// this one's.
const endsWithM = `length($0) >= length(ENVIRON["M"]) && substr($0, length($0) - length(ENVIRON["M"]) + 1) == ENVIRON["M"]`

// dropLineEndingWith is a shell filter dropping the lines that end with
// marker (a shell word, expanded by the shell).
func dropLineEndingWith(marker string) string {
	return `M=` + marker + ` awk '!(` + endsWithM + `)'`
}

// reaperScheduledCheck is shell printing "reaper_scheduled=1" when the
// crontab has the line of the reaper of the absolute root in $abs.
func reaperScheduledCheck() string {
	return `crontab -l 2>/dev/null | M="` + reaperMarker("") + `$abs" awk '` + endsWithM + ` { print "reaper_scheduled=1"; exit }'`
}

// RunReaper runs the reaper installed on h now and returns the ids it
// removed.
func RunReaper(ctx context.Context, h *hosts.Host) ([]string, error) {
	out, err := hosts.Output(ctx, h, "sh "+hosts.Quote(ReaperPath(h)))
	if err != nil {
		return nil, err
	}
	return reaped(string(out)), nil
}

// Reap runs the reaper on h now, installed there or not: the script goes
// on stdin, so nothing is written to the host, and only what the reaper
// removes (expired and abandoned sandboxes) changes. A root directory that
// does not exist holds nothing to reap. It returns the ids removed.
func (r *Registry) Reap(ctx context.Context, h *hosts.Host) ([]string, error) {
	defer r.invalidateReads(ctx, h) // what a refresh would see has changed
	root := hosts.Quote(h.RootDir)
	script := strings.Replace(reaperScript, "@ROOT@", root, 1)
	var out strings.Builder
	if err := h.Run(ctx, "[ -d "+root+" ] || exit 0; exec sh -s", strings.NewReader(script), &out); err != nil {
		return nil, fmt.Errorf("unable to run the reaper on host %q: %w", h.Host(), err)
	}
	return reaped(out.String()), nil
}

// reaped is the ids a reaper's output says it removed ("reaped ID ...").
func reaped(out string) []string {
	var ids []string
	for line := range strings.Lines(out) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "reaped" {
			ids = append(ids, f[1])
		}
	}
	return ids
}
