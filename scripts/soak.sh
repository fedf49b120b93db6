#!/usr/bin/env bash
# A fault soak: sandboxes (PostgreSQL with a volume) go through random
# lifecycle steps with the real Terraform CLI (create, refresh, stop, start,
# exec, snapshot, restore in place and into new sandboxes, destroy) while
# faults arrive from a seeded schedule: connection resets, black holes,
# latency spikes, bandwidth limits and sliced packets on the SSH path
# (toxiproxy in front of an sshd of the soak's own), sshd killed, dockerd
# killed with SIGKILL, the Terraform process killed mid-apply, and a full
# disk under the host's root directory (a journalled ext4, loop-mounted).
# After each round the faults stop, apply and plan must converge, and the
# invariants of docs/reliability.md are checked.
#
#   scripts/soak.sh --minutes N --seed S [--slots K] [--log FILE]
#
# Prints the seed (a run replays from it) and a table with one line per
# invariant ("N violations"); exits 0 only when every invariant has none.
# --log FILE keeps every Terraform run's output, round by round.
# Needs root (the loop mount, sshd, dockerd) and the harness
# (scripts/harness/install.sh, up.sh); builds toxiproxy v2.5.0 once into
# ~/.cache/sandboxer-tools.
set -euo pipefail

minutes=3 seed=0 slots=3 log=""
while [ $# -gt 0 ]; do
	case "$1" in
	--minutes) minutes="$2"; shift 2 ;;
	--seed) seed="$2"; shift 2 ;;
	--slots) slots="$2"; shift 2 ;;
	--log) log="$(realpath -m -- "$2")"; shift 2 ;;
	*) echo "usage: soak.sh --minutes N --seed S [--slots K] [--log FILE]" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "soak.sh: must run as root (loop mount, sshd, dockerd)" >&2; exit 2; }

# shellcheck source=lib/devprovider.sh
. "$(dirname "$0")/lib/devprovider.sh"
devprovider_setup

HARNESS="${SANDBOXER_HARNESS_DIR:-$HOME/.cache/sandboxer-harness}"
bash "$REPO_ROOT/scripts/harness/up.sh" >/dev/null

# shellcheck source=lib/toxiproxy.sh
. "$(dirname "$0")/lib/toxiproxy.sh"
toxiproxy="$(toxiproxy_server)"

WORK="$(devprovider_tmpdir soak)"
(cd "$REPO_ROOT" && go build -o "$WORK/soak" ./scripts/soak)
"$WORK/soak" -minutes "$minutes" -seed "$seed" -slots "$slots" -terraform "$TERRAFORM" \
	-cli-config "$TF_CLI_CONFIG_FILE" -work "$WORK" -toxiproxy "$toxiproxy" \
	-harness "$HARNESS" -repo-root "$REPO_ROOT" -log "$log"
