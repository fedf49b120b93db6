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
	root := strings.TrimSpace(string(abs))
	script := strings.Replace(reaperScript, "@ROOT@", root, 1)
	path := root + "/.sandboxer/bin/reaper.sh"
	if err := hosts.WriteFile(ctx, h, path, []byte(script), 0o700); err != nil {
		return fmt.Errorf("unable to install the reaper on host %q: %w", h.Host(), err)
	}
	marker := "# sandboxer-reaper " + root
	line := fmt.Sprintf("* * * * * sh %s >> %s 2>&1 %s", hosts.Quote(path), hosts.Quote(root+"/.sandboxer/reaper.log"), marker)
	cron := fmt.Sprintf(`command -v crontab >/dev/null 2>&1 || exit 0
{ crontab -l 2>/dev/null | grep -vF -- %s; echo %s; } | crontab -`, hosts.Quote(marker), hosts.Quote(line))
	if err := h.Run(ctx, cron, nil, nil); err != nil {
		return fmt.Errorf("unable to install the reaper's crontab entry on host %q: %w", h.Host(), err)
	}
	return nil
}

// RunReaper runs the reaper on h now and returns the ids it removed.
func RunReaper(ctx context.Context, h *hosts.Host) ([]string, error) {
	out, err := hosts.Output(ctx, h, "sh "+hosts.Quote(ReaperPath(h)))
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "reaped" {
			ids = append(ids, f[1])
		}
	}
	return ids, nil
}
