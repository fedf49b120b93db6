package composessh

import (
	"cmp"
	"fmt"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// The engine's network changes on a host are capped: dockerd 20.10 makes
// and removes networks one at a time behind locks of its own, so more at
// once only wait there, and 8 at once wedged it in a destroy of 500
// sandboxes (DefaultNetworkOperations). The cap is held on the host, not
// in the provider: lock files <root>/.sandboxer/netops/0 .. n-1 (n is the
// host block's max_network_operations), each taken with flock(1). So it
// covers only the engine's work (`compose up -d`, `compose down`), not the
// wait for the services to be ready, a teardown's stop of its containers
// (the services' own ends), nor a workspace's removal; the creates
// and destroys an apply asks together (hosts.AskTogether) run side by
// side in one command and take their slots there, one by one; and the
// provider processes sharing a root share its slots.

// slotsDir holds the slots' lock files (below the root directory).
var slotsDir = []string{".sandboxer", "netops"}

// DefaultNetworkOperations is how many network-changing operations (a
// sandbox's compose up or compose down) run on a host at once when its
// host block does not say (max_network_operations). Measured on 2 cores
// with dockerd 20.10 (docs/benchmarks.md, "Many sandboxes on one host"):
// 100 sandboxes applied and destroyed as fast with 4 at once as with 8,
// 10-15% slower with 2; and 8 at once wedged dockerd in the destroy of 500
// sandboxes, its network removals queued behind one lock.
const DefaultNetworkOperations = 4

// slotPoll is how long a waiter sleeps between its looks at the slots.
const slotPoll = "0.05"

// takeSlot is a script taking one of h's slots on file descriptor 8 of
// the shell that runs it, which holds it until releaseSlot or its end. A
// slot is the first free one, whichever is given back first: flock(1)
// waits on one file only, so a command takes its turn in a line first (a
// lock of its own, on descriptor 9 until it has a slot) and, first in it,
// looks at all the slots every slotPoll seconds. Nobody looks at the slots
// out of turn, so a slot given back between two looks goes to the first
// in line. Waiting on a slot picked in advance left slots idle while
// commands queued behind another (a destroy of 10 ended 0.6 s after the
// one before it). It exits when no slot can be taken (the directory
// cannot be made); bounded, when the teardown's deadline (teardownScript's
// _sbx_bounded and _sbx_end) passes first, with teardownLate.
func (e *Extension) takeSlot(h *hosts.Host, bounded bool) string {
	n := cmp.Or(e.NetworkOperations[h.Host()], DefaultNetworkOperations)
	dir := hosts.Quote(h.Path(slotsDir...))
	inLine, look := "flock 9 || exit 1", ""
	if bounded {
		inLine = "_sbx_bounded flock 9 || exit $?"
		look = fmt.Sprintf(`[ "$(date +%%s)" -lt "$_sbx_end" ] || exit %d; `, teardownLate)
	}
	return fmt.Sprintf(`mkdir -p -- %[1]s || exit 1
_sbx_slot() { _sbx_i=0; while [ "$_sbx_i" -lt %[2]d ]; do exec 8>>%[1]s/"$_sbx_i"; if flock -n 8; then return 0; fi; _sbx_i=$((_sbx_i + 1)); done; exec 8>&-; return 1; }
exec 9>>%[1]s/line; %[4]s; until _sbx_slot; do %[5]ssleep %[3]s; done; exec 9>&-
`, dir, n, slotPoll, inLine, look)
}

// releaseSlot gives back the slot takeSlot took.
const releaseSlot = "exec 8>&-\n"

// slotted is a script running cmd (in a subshell: its cd stays there)
// holding one of h's slots, released as soon as cmd ends; the script
// exits with cmd's status when it failed.
func (e *Extension) slotted(h *hosts.Host, cmd string) string {
	return e.takeSlot(h, false) + "( " + cmd + " ) 8>&-; _sbx_rc=$?; " + releaseSlot +
		`[ "$_sbx_rc" -eq 0 ] || exit "$_sbx_rc"` + "\n"
}
