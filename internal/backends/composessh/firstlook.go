package composessh

import (
	"context"
	"net/netip"
	"strings"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// The first look of a provider process at a host. Before its first
// `compose up`, a process's creates need three answers of the host, each
// once: the compose command, the root directory as the host resolves it,
// and the subnets in use there (for a stack with networks). Asked one
// after another they are three round trips on the path of every create of
// the walk; firstLook asks the ones not yet known in one command, and
// keeps each answer where its own call looks (detections,
// backends.WorkspaceDir, listings). An answer the look did not bring (a
// failure, say) is asked again by its own call, which reports it.

// The first look's sections, beside the detection's.
const (
	lookRoot  = "root"
	lookTaken = "taken"
)

// firstLook asks h what a create needs and this process does not know
// yet, in one command, when that is more than one thing; networks says the
// subnets in use are wanted before anything else (a restore lists them in
// the background while its volumes fill: prefetch). Only a create calls
// it: the root's resolution makes the root directory.
func (e *Extension) firstLook(ctx context.Context, h *hosts.Host, networks bool) {
	_, _ = e.looks.Do(ctx, h.Host(), func(ctx context.Context) (struct{}, error) {
		compose, detect := strings.Fields(e.ComposeCommand), false
		if len(compose) == 0 {
			argv, known, err := e.detections.Peek(ctx, h.Host())
			compose, detect = argv, !known || err != nil
		}
		root := !backends.BaseKnown(ctx, h, h.RootDir)
		list := false
		if networks {
			_, known, err := e.listings.Peek(ctx, h.Host())
			list = !known || err != nil
		}
		if btoi(detect)+btoi(root)+btoi(list) < 2 {
			return struct{}{}, nil // its own call asks it: nothing to save
		}
		reply, err := hosts.Ask(ctx, h, func(m hosts.Mark) string { return firstLookScript(m, h, compose, detect, root, list) })
		if err != nil {
			return struct{}{}, nil // each call asks again, and says why it cannot
		}
		for _, s := range reply.Sections {
			switch s.Kind {
			case lookRoot:
				backends.KeepBase(ctx, h, h.RootDir, s.Body)
			case lookTaken:
				taken := parseTaken(string(s.Body))
				_, _ = e.listings.Do(ctx, h.Host(), func(context.Context) ([]netip.Prefix, error) { return taken, nil })
			}
		}
		if detect {
			// No compose command is compose()'s to report: it asks again.
			if argv, err := e.detected(h, reply); err == nil {
				_, _ = e.detections.Do(ctx, h.Host(), func(context.Context) ([]string, error) { return argv, nil })
			}
		}
		return struct{}{}, nil
	})
}

// firstLookScript asks what firstLook wants: the detection's answer first
// (its head is the compose command), then the root (lookRoot) and the
// subnets in use (lookTaken), each only when its command succeeded.
func firstLookScript(m hosts.Mark, h *hosts.Host, compose []string, detect, root, networks bool) string {
	var b strings.Builder
	if detect {
		// engine's rule, on the host's answer
		b.WriteString(detectionScript(m, h) + "\ncase $_c in podman*) _e=podman ;; *) _e=docker ;; esac\n")
	} else {
		b.WriteString("_e=" + engine(compose) + "\n")
	}
	if root {
		b.WriteString("if _r=$(" + backends.BaseScript(h.RootDir) + "); then " + m.Section(lookRoot, "") + "; printf '%s\\n' \"$_r\"; fi\n")
	}
	if networks {
		b.WriteString("if _t=$(" + takenScript(h, `"$_e"`) + "); then " + m.Section(lookTaken, "") + "; printf '%s\\n' \"$_t\"; fi\n")
	}
	return b.String()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
