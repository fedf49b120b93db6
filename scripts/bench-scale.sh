#!/usr/bin/env bash
# bench-scale.sh: many sandboxes on one host, through the real terraform CLI.
# SANDBOXER_SCALE_N (default 500) compose sandboxes of two busybox services
# each are applied and destroyed in one run at -parallelism=20, on the
# harness's docker engine, through an sshd of the benchmark's own (the
# distribution's sftp-server, as in scripts/bench-apply.sh), with the
# provider configuration of bench-apply.sh's apply rows
# (scripts/bench/apply/provider). After each apply and destroy it checks:
#
#   - every sandbox ready: `status` ready and both services running in
#     Terraform's state, and both containers running in `docker ps`
#   - ids, compose projects and workspaces all distinct
#   - nothing left on the host after the destroy: no container, network or
#     volume of the run's compose projects (sbx-<id>), no workspace, record
#     or network reservation under the root directory
#   - then, once, that the engine is not wedged: `docker info` answers
#     within 10 s
#
# and prints the cost per sandbox (apply + destroy, divided by N) vs the
# same for 10 sandboxes (median of SANDBOXER_BENCH_RUNS cycles of 10, made
# first)                                                        goal <= 1.3x
# with the apply and the destroy shown apart (no goal). Prints a table and
# exits 1 when a check fails or the goal is missed. Too long for CI, and not
# run by it: 500 sandboxes are 1,000 containers and 500 networks.
#
#   bash scripts/bench-scale.sh
#   SANDBOXER_SCALE_N=30 SANDBOXER_BENCH_RUNS=1 bash scripts/bench-scale.sh   # a try
#
# Settings: SANDBOXER_SCALE_N, SANDBOXER_BENCH_RUNS (3), SANDBOXER_BENCH_COMPOSE
# (default `docker compose`), SANDBOXER_SCALE_SSH_PORT (the benchmark's sshd,
# default 2296), SANDBOXER_SCALE_NETWORK_OPS (the host's max_network_operations;
# default: the provider's), SANDBOXER_BENCH_TRACE (as in bench-apply.sh). Needs the
# harness: scripts/harness/install.sh and up.sh, as root.
set -euo pipefail

# shellcheck source=scripts/lib/bench.sh
. "$(dirname "$0")/lib/bench.sh"

N="${SANDBOXER_SCALE_N:-500}"
BASE=10
RUNS="${SANDBOXER_BENCH_RUNS:-3}"
COMPOSE="${SANDBOXER_BENCH_COMPOSE:-docker compose}"
PROVIDER_COMPOSE="${SANDBOXER_BENCH_COMPOSE:-}" # unset: detected on the host, as users get it
PORT="${SANDBOXER_SCALE_SSH_PORT:-2296}"
PARALLELISM=20

bench_setup
state="$BENCH_STATE"
bench_sshd sftp-server "$PORT" sftp-server

root="$(devprovider_tmpdir root)"
repo="$(devprovider_tmpdir repo)"
# A shell that waits on a child: no process started every second, times
# 1,000 containers; TERM ends it at once.
cat >"$repo/compose.yaml" <<YAML
services:
  a:
    image: $SANDBOXER_TEST_IMAGE
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 2147483647 & wait"]
  b:
    image: $SANDBOXER_TEST_IMAGE
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 2147483647 & wait"]
YAML
cfg="$(devprovider_tmpdir scale)"
cp "$REPO_ROOT/scripts/bench/apply/provider/main.tf" "$cfg/"
vars=(-var "address=127.0.0.1:$PORT" -var "user=$SANDBOXER_TEST_SSH_USER" -var "private_key_file=$SANDBOXER_TEST_SSH_KEY"
	-var "known_hosts_file=$state/known_hosts" -var "root_dir=$root" -var "repo=$repo" -var "compose_command=$PROVIDER_COMPOSE")
if [ -n "${SANDBOXER_SCALE_NETWORK_OPS:-}" ]; then vars+=(-var "max_network_operations=$SANDBOXER_SCALE_NETWORK_OPS"); fi

applied_n=0
# shellcheck disable=SC2317 # run on exit
destroy_all() { [ "$applied_n" = 0 ] || tf "$cfg" destroy -auto-approve -parallelism="$PARALLELISM" "${vars[@]}" -var "n=$applied_n" || true; }
devprovider_on_exit destroy_all

# What the checks found, summed over every cycle.
not_ready=0 not_distinct=0 left_engine=0 left_root=0

check_applied() { # $1 = number of sandboxes: counts those not ready and the duplicates; keeps their compose projects
	local n="$1" sandboxes missing bad dup field
	sandboxes="$("$TERRAFORM" -chdir="$cfg" show -json | jq -c '.values.root_module.resources[] | select(.type == "sandboxer_sandbox") | .values')"
	jq -r '.compose_project' <<<"$sandboxes" >"$state/projects"
	missing=$((n - $(wc -l <"$state/projects")))
	# Not ready: in Terraform's state (status, services), or in the engine's
	# view (not both containers running), or both.
	docker ps --format '{{.Label "com.docker.compose.project"}}' >"$state/running"
	bad="$({
		jq -r 'select(.status != "ready" or ([.services[] | select(.state == "running")] | length) != 2) | .compose_project' <<<"$sandboxes"
		awk 'NR == FNR {want[$1] = 1; next} ($1 in want) {c[$1]++} END {for (p in want) if (c[p] != 2) print p}' "$state/projects" "$state/running"
	} | sort -u | wc -l)"
	not_ready=$((not_ready + missing + bad))
	dup=0
	for field in id compose_project workspace_dir; do
		dup=$((dup + n - missing - $(jq -r ".$field" <<<"$sandboxes" | sort -u | wc -l)))
	done
	not_distinct=$((not_distinct + dup))
	log "$n sandboxes applied: $((missing + bad)) not ready, $dup duplicates"
}
check_destroyed() { # counts what the destroy left of the projects check_applied kept
	local engine rootn
	engine="$({
		docker ps -a --format '{{.Names}} {{.Label "com.docker.compose.project"}}'
		docker network ls --format '{{.Name}} {{.Label "com.docker.compose.project"}}'
		docker volume ls --format '{{.Name}} {{.Label "com.docker.compose.project"}}'
	} | grep -cF -f "$state/projects" || true)"
	rootn="$(find "$root" -mindepth 1 -maxdepth 1 ! -name .sandboxer | wc -l)"
	rootn=$((rootn + $(find "$root/.sandboxer/sandboxes" "$root/.sandboxer/networks" -mindepth 1 2>/dev/null | wc -l)))
	left_engine=$((left_engine + engine)) left_root=$((left_root + rootn))
	log "destroyed: $engine containers, networks or volumes and $rootn entries under the root directory left"
}
cycle() { # $1 = number of sandboxes, $2 = file name: their apply and destroy times, checked
	local n="$1"
	applied_n="$n"
	timed tf "$cfg" apply -auto-approve -parallelism="$PARALLELISM" "${vars[@]}" -var "n=$n" >>"$state/$2_apply"
	check_applied "$n"
	timed tf "$cfg" destroy -auto-approve -parallelism="$PARALLELISM" "${vars[@]}" -var "n=$n" >>"$state/$2_destroy"
	applied_n=0
	check_destroyed
}

: >"$state/base_apply" && : >"$state/base_destroy" && : >"$state/scale_apply" && : >"$state/scale_destroy"
for run in $(seq 1 "$RUNS"); do
	log "run $run: $BASE sandboxes at -parallelism=$PARALLELISM"
	cycle "$BASE" base
	log "run $run: apply $(tail -n1 "$state/base_apply") s, destroy $(tail -n1 "$state/base_destroy") s"
done
log "$N sandboxes at -parallelism=$PARALLELISM"
cycle "$N" scale
log "apply $(tail -n1 "$state/scale_apply") s, destroy $(tail -n1 "$state/scale_destroy") s"
wedged=0
timeout 10 docker info >/dev/null 2>&1 || wedged=1

per() { awk -v t="$1" -v n="$2" 'BEGIN {printf "%.3f", t / n}'; }
base_apply="$(median <"$state/base_apply")" base_destroy="$(median <"$state/base_destroy")"
scale_apply="$(tail -n1 "$state/scale_apply")" scale_destroy="$(tail -n1 "$state/scale_destroy")"
bench_table "bench-scale.sh: $("$TERRAFORM" version | sed -n 1p), $($COMPOSE version --short 2>/dev/null || $COMPOSE version | sed -n 1p) ($COMPOSE), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); $BASE sandboxes: medians of $RUNS"
row "apply + destroy per sandbox, $N sandboxes vs $BASE" "$(per "$(awk -v a="$scale_apply" -v d="$scale_destroy" 'BEGIN {print a + d}')" "$N")" \
	"$(per "$(awk -v a="$base_apply" -v d="$base_destroy" 'BEGIN {print a + d}')" "$BASE")" 1.3
info "apply per sandbox, $N vs $BASE (no goal)" "$(per "$scale_apply" "$N")" "$(per "$base_apply" "$BASE")"
info "destroy per sandbox, $N vs $BASE (no goal)" "$(per "$scale_destroy" "$N")" "$(per "$base_destroy" "$BASE")"
count "sandboxes not ready after an apply (every cycle)" "$not_ready" 0
count "ids, compose projects or workspaces not distinct (every cycle)" "$not_distinct" 0
count "containers, networks and volumes of the sandboxes left after a destroy (every cycle)" "$left_engine" 0
count "workspaces, records and network reservations left under the root directory (every cycle)" "$left_root" 0
count "docker info without an answer within 10 s after the last destroy" "$wedged" 0
exit "$bench_missed"
