#!/usr/bin/env bash
# bench-apply.sh: the provider measured where users feel it, through the real
# terraform CLI, side by side with what users write by hand, in one run on
# one SSH host (the harness's docker engine, reached through an sshd of the
# benchmark's own so that only its handshakes are counted):
#
#   1. `terraform apply` of N compose sandboxes (default 10)
#        vs terraform_data + file/remote-exec provisioners doing mkdir, copy,
#        `compose up -d` (scripts/bench/apply/remote-exec)       goal <= 0.7x
#   2. the same apply vs the floor: N parallel shell
#        `mkdir; cp; compose up -d` on the host                  goal <= 1.5x
#   3. `terraform plan` (refresh) of M sandboxes + M snapshots (default 50)
#        vs 1 + 1                                                goal <= 2x
#   4. SSH handshakes of the apply of N and of the plan of M     goal 1 each
#
# Medians of SANDBOXER_BENCH_RUNS (3) runs, each side timed in turn, so load
# on the host weighs on all of them alike. Prints a table and exits 1 when a
# goal is missed. Results and method: docs/benchmarks.md.
#
#   bash scripts/bench-apply.sh
#   SANDBOXER_BENCH_N=4 SANDBOXER_BENCH_M=10 SANDBOXER_BENCH_RUNS=1 bash scripts/bench-apply.sh   # quick
#
# Settings: SANDBOXER_BENCH_N, _M, _RUNS, SANDBOXER_BENCH_COMPOSE (the compose
# command on every side; default `docker compose`, v2, as on users' hosts),
# SANDBOXER_BENCH_SSH_PORT (the benchmark's sshd, default 2298). Needs the
# harness: scripts/harness/install.sh and up.sh, as root.
set -euo pipefail

# shellcheck source=scripts/lib/devprovider.sh
. "$(dirname "$0")/lib/devprovider.sh"

N="${SANDBOXER_BENCH_N:-10}"
M="${SANDBOXER_BENCH_M:-50}"
RUNS="${SANDBOXER_BENCH_RUNS:-3}"
COMPOSE="${SANDBOXER_BENCH_COMPOSE:-docker compose}"
PORT="${SANDBOXER_BENCH_SSH_PORT:-2298}"

log() { printf 'bench-apply.sh: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

env_file="$HOME/.cache/sandboxer-harness/env"
[ -f "$env_file" ] || die "no harness: run scripts/harness/install.sh and scripts/harness/up.sh"
# shellcheck disable=SC1090
. "$env_file"
devprovider_setup
unset TF_LOG TF_LOG_PROVIDER
export TF_IN_AUTOMATION=1 TF_INPUT=0

# ---------------------------------------------------------------- the host
# An sshd of our own, configured as the harness's, logging to our directory.
state="$(devprovider_tmpdir sshd)"
sed -e "s|^ListenAddress .*|ListenAddress 127.0.0.1:$PORT|" \
	-e "s|^PidFile .*|PidFile $state/sshd.pid|" \
	"$HOME/.cache/sandboxer-harness/sshd_config_2222" >"$state/sshd_config"
/usr/sbin/sshd -f "$state/sshd_config" -E "$state/sshd.log" || die "sshd on port $PORT did not start; see $state/sshd.log"
stop_sshd() { [ -f "$state/sshd.pid" ] && kill "$(cat "$state/sshd.pid")" 2>/dev/null; }
devprovider_on_exit stop_sshd
printf '[127.0.0.1]:%s %s\n' "$PORT" "$(cut -d' ' -f1,2 "$SANDBOXER_TEST_HOST_KEY")" >"$state/known_hosts"
handshakes() { grep -c 'Accepted publickey' "$state/sshd.log" || true; }

root="$(devprovider_tmpdir root)"
repo="$(devprovider_tmpdir repo)"
cat >"$repo/docker-compose.yml" <<YAML
services:
  app:
    image: $SANDBOXER_TEST_IMAGE
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
YAML
echo "fixture" >"$repo/README.txt"

work() { # $1 = name of a scratch copy of scripts/bench/apply/$2
	local dir
	dir="$(devprovider_tmpdir "$1")"
	cp "$REPO_ROOT/scripts/bench/apply/$2/main.tf" "$dir/"
	printf '%s\n' "$dir"
}
tf() { local dir="$1"; shift; "$TERRAFORM" -chdir="$dir" "$@" -no-color >"$dir/last.log" 2>&1 || { tail -n 30 "$dir/last.log" >&2; return 1; }; }
common=(-var "address=127.0.0.1:$PORT" -var "user=$SANDBOXER_TEST_SSH_USER" -var "private_key_file=$SANDBOXER_TEST_SSH_KEY"
	-var "known_hosts_file=$state/known_hosts" -var "root_dir=$root" -var "repo=$repo" -var "compose_command=$COMPOSE")
re_vars=(-var "host=127.0.0.1" -var "port=$PORT" -var "user=$SANDBOXER_TEST_SSH_USER" -var "private_key_file=$SANDBOXER_TEST_SSH_KEY"
	-var "root_dir=$root" -var "repo=$repo" -var "compose_command=$COMPOSE")

prov="$(work provider provider)"
re="$(work remote-exec remote-exec)"
(cd "$re" && "$TERRAFORM" init -no-color >/dev/null) || die "terraform init of the remote-exec configuration failed"

cleanup_all() {
	tf "$prov" destroy -auto-approve "${common[@]}" -var "n=$N" || true
	tf "$re" destroy -auto-approve "${re_vars[@]}" -var "n=$N" || true
	for d in "${planM:-}" "${plan1:-}"; do [ -z "$d" ] || tf "$d" destroy -auto-approve -parallelism=20 "${common[@]}" || true; done
	floor_down || true
}
devprovider_on_exit cleanup_all

floor_up() {
	local i
	for i in $(seq 1 "$N"); do
		(mkdir -p "$root/fl-$i" && cp -R "$repo/." "$root/fl-$i/" && cd "$root/fl-$i" && $COMPOSE -p "bench-fl-$i" up -d >/dev/null 2>&1) &
	done
	wait
}
floor_down() {
	local i
	for i in $(seq 1 "$N"); do
		[ -d "$root/fl-$i" ] || continue
		(cd "$root/fl-$i" && $COMPOSE -p "bench-fl-$i" down -v --remove-orphans -t 1 >/dev/null 2>&1; rm -rf "$root/fl-$i") &
	done
	wait
}

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
timed() { # prints the seconds "$@" took; fails as it fails
	local t0
	t0="$(now)"
	"$@"
	awk -v a="$t0" -v b="$(now)" 'BEGIN {printf "%.3f\n", b - a}'
}

# ---------------------------------------------------------------- 1, 2, 4: apply of N
log "apply of $N compose sandboxes ($COMPOSE), $RUNS runs per side"
: >"$state/t_prov" && : >"$state/t_re" && : >"$state/t_floor"
for run in $(seq 1 "$RUNS"); do
	h0="$(handshakes)"
	timed tf "$prov" apply -auto-approve "${common[@]}" -var "n=$N" >>"$state/t_prov"
	h_apply=$(($(handshakes) - h0))
	tf "$prov" destroy -auto-approve "${common[@]}" -var "n=$N"
	h0="$(handshakes)"
	timed tf "$re" apply -auto-approve "${re_vars[@]}" -var "n=$N" >>"$state/t_re"
	h_re=$(($(handshakes) - h0))
	tf "$re" destroy -auto-approve "${re_vars[@]}" -var "n=$N"
	timed floor_up >>"$state/t_floor"
	floor_down
	log "run $run: provider $(tail -n1 "$state/t_prov") s, remote-exec $(tail -n1 "$state/t_re") s, shell $(tail -n1 "$state/t_floor") s"
done
t_prov="$(median <"$state/t_prov")" t_re="$(median <"$state/t_re")" t_floor="$(median <"$state/t_floor")"

# ---------------------------------------------------------------- 3, 4: plan of M + M
log "plan (refresh) of $M sandboxes + $M snapshots vs 1 + 1"
planM="$(work plan-m provider)" plan1="$(work plan-1 provider)"
common_m=("${common[@]}" -var "snapshots=true")
tf "$planM" apply -auto-approve -parallelism=20 "${common_m[@]}" -var "n=$M"
tf "$plan1" apply -auto-approve "${common_m[@]}" -var "n=1"
: >"$state/t_planM" && : >"$state/t_plan1"
for run in $(seq 1 "$RUNS"); do
	h0="$(handshakes)"
	timed tf "$planM" plan -detailed-exitcode "${common_m[@]}" -var "n=$M" >>"$state/t_planM"
	h_plan=$(($(handshakes) - h0))
	timed tf "$plan1" plan -detailed-exitcode "${common_m[@]}" -var "n=1" >>"$state/t_plan1"
done
t_planM="$(median <"$state/t_planM")" t_plan1="$(median <"$state/t_plan1")"
# Destroyed here, not on exit, so planM/plan1 are not destroyed twice.
tf "$planM" destroy -auto-approve -parallelism=20 "${common_m[@]}" -var "n=$M"
tf "$plan1" destroy -auto-approve "${common_m[@]}" -var "n=1"
planM="" plan1=""

# ---------------------------------------------------------------- report
missed=0
row() { # what, measured, baseline, goal (ratio <=)
	local ratio verdict
	ratio="$(awk -v a="$2" -v b="$3" 'BEGIN {printf "%.2f", a / b}')"
	if awk -v r="$ratio" -v g="$4" 'BEGIN {exit !(r <= g)}'; then verdict=PASS; else verdict=FAIL missed=1; fi
	printf '| %s | %s s vs %s s | %sx | <= %sx | %s |\n' "$1" "$2" "$3" "$ratio" "$4" "$verdict"
}
count() { # what, measured, goal (<=)
	local verdict=PASS
	[ "$2" -le "$3" ] || verdict=FAIL missed=1
	printf '| %s | %s | | <= %s | %s |\n' "$1" "$2" "$3" "$verdict"
}
echo
echo "bench-apply.sh: $("$TERRAFORM" version | head -n1), $($COMPOSE version --short 2>/dev/null || $COMPOSE version | head -n1) ($COMPOSE), $(nproc) CPUs, medians of $RUNS"
echo
echo "| what | measured | ratio | goal | |"
echo "|---|---|---|---|---|"
row "apply of $N sandboxes vs remote-exec" "$t_prov" "$t_re" 0.7
row "apply of $N sandboxes vs $N parallel shell mkdir; cp; compose up -d" "$t_prov" "$t_floor" 1.5
row "plan of $M sandboxes + $M snapshots vs 1 + 1" "$t_planM" "$t_plan1" 2
count "SSH handshakes, apply of $N (remote-exec: $h_re)" "$h_apply" 1
count "SSH handshakes, plan of $M + $M" "$h_plan" 1
exit "$missed"
