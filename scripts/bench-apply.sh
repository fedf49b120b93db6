#!/usr/bin/env bash
# bench-apply.sh: the provider measured where users feel it, through the real
# terraform CLI, side by side with what users would otherwise use, in one run
# on one SSH host (the harness's docker engine, reached through sshds of the
# benchmark's own, so that only its handshakes are counted). The host's sshd
# runs the distribution's external sftp-server (`Subsystem sftp
# /usr/lib/openssh/sftp-server`), as hosts ship it; rows 1, 2 and 4 run
# again through an sshd with no Subsystem line, as on hardened hosts. The
# table's sshd column says which each row used.
#
#   1. `terraform apply` of N compose sandboxes (default 10)
#        vs terraform_data + file/remote-exec provisioners doing mkdir, copy,
#        `compose up -d` (scripts/bench/apply/remote-exec)       goal <= 0.5x
#   2. the same apply vs the floor: N parallel shell
#        `mkdir; cp; compose up -d` on the host                  goal <= 1.5x
#  2b. the apply of N through the sshd without an sftp subsystem vs
#        through the one with it                                 goal <= 1.1x
#   3. `terraform plan` (refresh) of M sandboxes + M snapshots (default 50)
#        vs 1 + 1                                                goal <= 2x
#  3b. the same of L sandboxes + L snapshots (default 200), to show how
#        the cost grows with size                                goal <= 3x
#   4. SSH handshakes of the apply of N and of the plan of M     goal 1 each
#  4b. `terraform apply` of N copies of a stack with a fixed container_name
#        and a fixed host port (each rendered: free port, scoped name)
#        vs the apply of N stacks without                        goal <= 1.1x
#   5. `terraform apply` adding an incremental snapshot after 1% of the files
#        of a workspace changed (default 5,000 files, 256 MiB, half random)
#        vs the full snapshot's, each counted above a plan      goal <= 0.15x
#   6. the full snapshot's apply (above a plan) vs `tar -c | gzip -1`
#        of the workspace                                        goal <= 0.3x
#   7. `terraform apply` of a restore of the latest snapshot into a new
#        sandbox (above a plan) vs `tar -x` of the same data     goal <= 0.8x
#   8. the store's size after the full snapshot vs the size of its
#        `tar -c | gzip -1`                                      goal <= 1.0x
#   9. `terraform apply` of a snapshot of a compose sandbox whose named
#        volume holds VOL_FILES files, VOL_MIB MiB (default 5,000, 512;
#        half random), above a plan, vs the recipe users run today:
#        `docker run --rm -v VOL:/v IMAGE tar -c -C /v . | gzip -1 > file`
#                                                                goal <= 1.0x
#  10. `terraform apply` of a restore of it into a new sandbox (new volume,
#        above a plan) vs the matching restore of the recipe's file:
#        `gzip -dc file | docker run -i -v NEW:/v IMAGE tar -x -C /v` into a
#        fresh volume                                             goal <= 1.0x
#        (and, shown without a goal, vs `tar -x` of an uncompressed tar)
#  11. incremental volume snapshot after 1% of its files changed vs the
#        full one (apply above plan)                              goal <= 0.15x
#  12. the incremental snapshot's stored_bytes vs the bytes changed
#                                                                goal <= 1.1x
#  13. TUN_MIB MiB (default 256) read through a `sandboxer_tunnel` to a
#        service of a compose sandbox that publishes nothing, timed by a
#        local-exec provisioner while the tunnel is open, vs the same read
#        through `ssh -N -L` to the service's container address over the
#        same sshd, in turns           goal <= 1.11x (throughput >= 0.9x)
#  14. connection setup through each: connect until the far end's close
#        arrives, median of TUN_CONNS (default 50) connections, each opened
#        alone (0.2 s after the one before), in turns            goal <= 1.2x
#        (and, shown without a goal, their 90th percentile, and the median
#        of as many back to back: with no session on its SSH connection,
#        `ssh -N` keeps Nagle's algorithm on, and each open waits for the
#        delayed ACK of the close before it)
#  15-18. checkpoints of the workspace of rows 5-8 against restic (repository
#        format 2, compression auto), the same tree and the same 1% change;
#        Terraform's side is the whole `terraform apply`, as users type it:
#        15. full: apply of the snapshot vs `restic backup TREE` into a new
#            repository (`restic init` untimed)                  goal <= 1.0x
#        16. incremental: the second snapshot's apply vs a second
#            `restic backup`                                     goal <= 1.0x
#        17. restore into a new place: apply of a restore into a new sandbox
#            vs `restic restore latest --target NEW`             goal <= 1.0x
#        18. bytes stored after both: the store (du -sb) vs the restic
#            repository (du -sb)                                 goal <= 1.0x
#  19-22. the same four for the named volume of rows 9-12, restic run in a
#        container of its own over the volume, as users do: `docker run --rm
#        -v VOL:/data:ro -v REPO:/repo IMAGE restic backup /data`, and the
#        restore into a fresh volume (IMAGE: Debian's restic and the
#        libraries ldd names, imported once)                     goal <= 1.0x
#  23. `terraform apply` stopping the N sandboxes of row 1 in place
#        (desired_state = "stopped") vs N parallel shell `compose stop`
#        of N stacks on the host                                 goal <= 1.5x
#  24. the apply starting them again (ready) vs N parallel `compose start`
#                                                                goal <= 1.5x
#        and, without a goal, the least rows 23 and 24 can be: an apply
#        changing only the records (ttl) plus the shell's stops (starts),
#        vs those stops (starts); and `ssh host true` as the SSH user
#  25. `terraform apply -invoke` of sandboxer_exec running `true` in a
#        sandbox's service, minus the invoke of an action doing next to
#        nothing (sandboxer_extend: one record read and write), vs `ssh
#        host docker compose -p PROJECT exec -T app true`       goal <= 1.2x
#        (needs Terraform >= 1.14: TERRAFORM=...; skipped, saying so,
#        with an older one)
#  26-31. across a network: the rows of scripts/lib/bench-network.sh,
#        through a latency proxy at RTTs of 0, 10 and 50 ms: apply, plan
#        and destroy of N vs the docker provider's docker_compose (goal
#        <= 0.7x), vs docker compose by hand over DOCKER_HOST=ssh://
#        (<= 0.8x), the network cost of the apply (<= 10 round trips) and
#        the round trips per sandbox of a create, a refresh and a destroy
#        (<= 2 each)
#
# Medians of SANDBOXER_BENCH_RUNS (3) runs, each side timed in turn, so load
# on the host weighs on all of them alike. Prints a table and exits 1 when a
# goal is missed. Results and method: docs/benchmarks.md.
#
#   bash scripts/bench-apply.sh
#   SANDBOXER_BENCH_N=4 SANDBOXER_BENCH_M=10 SANDBOXER_BENCH_L=20 SANDBOXER_BENCH_RUNS=1 bash scripts/bench-apply.sh   # quick
#   SANDBOXER_BENCH_ROWS=sshd bash scripts/bench-apply.sh         # rows 1, 2, 2b and 4, both sshds
#   SANDBOXER_BENCH_ROWS=checkpoint bash scripts/bench-apply.sh   # rows 5-8 only
#   SANDBOXER_BENCH_ROWS=restic bash scripts/bench-apply.sh       # rows 15-22 only
#   SANDBOXER_BENCH_ROWS=volume bash scripts/bench-apply.sh       # rows 9-12 only
#   SANDBOXER_BENCH_ROWS=tunnel bash scripts/bench-apply.sh       # rows 13-14 only
#   SANDBOXER_BENCH_ROWS=daytwo TERRAFORM=/path/to/terraform-1.16 bash scripts/bench-apply.sh  # rows 23-25 only
#   SANDBOXER_BENCH_ROWS=network bash scripts/bench-apply.sh      # rows 26-31 only
#   SANDBOXER_BENCH_USER=sandboxer-ci bash scripts/bench-apply.sh # as a user with a light login shell
#
# Settings: SANDBOXER_BENCH_ROWS (a comma-separated list of: apply = 1, 2, 4
# and 4b through the sshd with sftp-server; sshd = 1, 2 and 4 through both
# sshds, and 2b; plan = 3, 3b and 4; checkpoint = 5-8; checkpoint-restic =
# 15-18; volume = 9-12; volume-restic = 19-22; restic = 15-22; tunnel =
# 13-14; daytwo = 23-25; network = 26-31; default all), SANDBOXER_BENCH_N, _M, _L, _RUNS, SANDBOXER_BENCH_CK_FILES,
# _CK_MIB, _VOL_FILES, _VOL_MIB, _TUN_MIB, _TUN_CONNS, SANDBOXER_BENCH_COMPOSE
# (the compose command on every side; default `docker compose`, v2, as on
# users' hosts), SANDBOXER_BENCH_SSH_PORT (the benchmark's sshd with
# sftp-server, default 2298; the one without an sftp subsystem listens on the
# next port), SANDBOXER_BENCH_USER (the SSH user of every side, default
# $SANDBOXER_TEST_SSH_USER: root, whose ~/.bashrc on this machine runs
# `pyenv init`, a slow login shell; the harness's sandboxer-ci has Debian's,
# which returns at once when not interactive), SANDBOXER_BENCH_TRACE (a directory: each terraform step's
# provider log at DEBUG, with every host command and its duration, goes
# there; slower), SANDBOXER_BENCH_DISK (journal: the checkpoint and volume
# rows on a journalled ext4 the benchmark loop-mounts, the default; root:
# on the root file system), SANDBOXER_BENCH_DISK_SIZE (that file system's
# size, default 8G, sparse), SANDBOXER_BENCH_SETTLE (seconds the checkpoint
# and volume rows wait after the last cleanup of a run of this benchmark,
# default 0 on the journalled disk, 360 on root: see "Deletions and this
# disk" in docs/benchmarks.md), SANDBOXER_BENCH_NETWORK_OPS (the bench host's
# max_network_operations; default the provider's), SANDBOXER_BENCH_RTTS,
# SANDBOXER_BENCH_PEER and SANDBOXER_BENCH_TOXIPROXY_PORT (the network rows:
# scripts/lib/bench-network.sh). Needs the harness: scripts/harness/install.sh (restic
# comes from it) and up.sh, as root.

# The `sh -c` scripts below take their arguments as $1, $2...
# shellcheck disable=SC2016
set -euo pipefail

# shellcheck source=scripts/lib/bench.sh
. "$(dirname "$0")/lib/bench.sh"

N="${SANDBOXER_BENCH_N:-10}"
M="${SANDBOXER_BENCH_M:-50}"
L="${SANDBOXER_BENCH_L:-200}"
RUNS="${SANDBOXER_BENCH_RUNS:-3}"
# The floors run what a user types; the provider, unless told, detects
# its command on the host as it does for users.
COMPOSE="${SANDBOXER_BENCH_COMPOSE:-docker compose}"
PROVIDER_COMPOSE="${SANDBOXER_BENCH_COMPOSE:-}"
PORT="${SANDBOXER_BENCH_SSH_PORT:-2298}"
ROWS="${SANDBOXER_BENCH_ROWS:-apply,sshd,plan,checkpoint,volume,restic,tunnel,daytwo,network}"
case ",$ROWS," in *,restic,*) ROWS="$ROWS,checkpoint-restic,volume-restic" ;; esac
want() { case ",$ROWS," in *",$1,"*) return 0 ;; esac; return 1; }

bench_setup
state="$BENCH_STATE"
BENCH_USER="${SANDBOXER_BENCH_USER:-$SANDBOXER_TEST_SSH_USER}"
# host_dir NAME: a scratch directory the SSH user works in on the host.
host_dir() {
	local dir
	dir="$(devprovider_tmpdir "$1")"
	if [ "$BENCH_USER" != root ]; then
		chmod 755 "$DEVPROVIDER_TMP" && chown "$BENCH_USER" "$dir"
	fi
	printf '%s\n' "$dir"
}

# ---------------------------------------------------------------- the host
declare -A sshd_port=([sftp-server]="$PORT" [none]="$((PORT + 1))")
bench_sshd sftp-server "$PORT" sftp-server
if want sshd; then bench_sshd none "${sshd_port[none]}" none; fi

root="$(host_dir root)"
repo="$(devprovider_tmpdir repo)"
cat >"$repo/docker-compose.yml" <<YAML
services:
  app:
    image: $SANDBOXER_TEST_IMAGE
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
YAML
echo "fixture" >"$repo/README.txt"
# The same stack as people write it: a fixed container name and a fixed
# host port. Every copy runs rendered (free host port, scoped name).
repo_ports="$(devprovider_tmpdir repo-ports)"
cat >"$repo_ports/docker-compose.yml" <<YAML
services:
  app:
    image: $SANDBOXER_TEST_IMAGE
    container_name: app
    ports: ["18080:80"]
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
YAML
echo "fixture" >"$repo_ports/README.txt"

# ---------------------------------------------------------------- the checkpoint rows' disk
# Hosts in the field run ext4 with a journal, busy with other work. This
# machine's root file system has no journal: there fsync is nearly free and
# creating files soon after deleting many is slow. SANDBOXER_BENCH_DISK=journal
# (the default) puts everything the checkpoint and volume rows write (roots
# and their stores, restic's repositories, restored trees; a volume's data
# stays in the engine's own storage) on a journalled ext4 the benchmark
# makes, a loop-mounted file, and waits for nothing: each run starts right
# after the previous run's deletions. SANDBOXER_BENCH_DISK=root measures on
# the root file system, SANDBOXER_BENCH_SETTLE seconds after the last
# deletions, as before.
DISK="${SANDBOXER_BENCH_DISK:-journal}"
disk="$state"
if [ "$DISK" = journal ] && { want checkpoint || want checkpoint-restic || want volume || want volume-restic; }; then
	command -v mkfs.ext4 >/dev/null || die "mkfs.ext4 not found (e2fsprogs): run scripts/harness/install.sh"
	disk="$(devprovider_tmpdir disk)"
	truncate -s "${SANDBOXER_BENCH_DISK_SIZE:-8G}" "$DEVPROVIDER_TMP/disk.img"
	# Inode tables and journal written now, not by the kernel's lazy init
	# during the rows.
	mkfs.ext4 -q -F -O has_journal -E lazy_itable_init=0,lazy_journal_init=0 "$DEVPROVIDER_TMP/disk.img"
	mount -o loop "$DEVPROVIDER_TMP/disk.img" "$disk"
	devprovider_on_exit "umount -l '$disk'" # after cleanup_all (hooks run last first)
	chmod 755 "$disk"
	log "checkpoint and volume rows on a journalled ext4 ($(dumpe2fs -h "$DEVPROVIDER_TMP/disk.img" 2>/dev/null | grep -c has_journal) journal, loop-mounted at $disk), no settle time"
elif [ "$DISK" != root ] && [ "$DISK" != journal ]; then
	die "SANDBOXER_BENCH_DISK=$DISK: journal or root"
fi
# disk_dir NAME: a directory on that disk the SSH user works in.
disk_dir() {
	mkdir -p "$disk/$1"
	if [ "$BENCH_USER" != root ]; then chown "$BENCH_USER" "$disk/$1"; fi
	printf '%s\n' "$disk/$1"
}

work() { # $1 = name of a scratch copy of scripts/bench/apply/$2
	local dir
	dir="$(devprovider_tmpdir "$1")"
	cp "$REPO_ROOT/scripts/bench/apply/$2/main.tf" "$dir/"
	printf '%s\n' "$dir"
}
common=(-var "address=127.0.0.1:$PORT" -var "user=$BENCH_USER" -var "private_key_file=$SANDBOXER_TEST_SSH_KEY"
	-var "known_hosts_file=$state/known_hosts" -var "root_dir=$root" -var "repo=$repo" -var "compose_command=$PROVIDER_COMPOSE")
if [ -n "${SANDBOXER_BENCH_NETWORK_OPS:-}" ]; then common+=(-var "max_network_operations=$SANDBOXER_BENCH_NETWORK_OPS"); fi
re_vars=(-var "host=127.0.0.1" -var "port=$PORT" -var "user=$BENCH_USER" -var "private_key_file=$SANDBOXER_TEST_SSH_KEY"
	-var "root_dir=$root" -var "repo=$repo" -var "compose_command=$COMPOSE")
ssh_vars=(-var "address=127.0.0.1:$PORT" -var "user=$BENCH_USER" -var "private_key_file=$SANDBOXER_TEST_SSH_KEY"
	-var "known_hosts_file=$state/known_hosts")

prov="$(work provider provider)"
re="$(work remote-exec remote-exec)"
(cd "$re" && "$TERRAFORM" init -no-color >/dev/null) || die "terraform init of the remote-exec configuration failed"

all_snapshots=(-var 'snapshots=["warm","full","inc"]' -var restore=inc)

# Deletions: on this machine's disk (ext4 without a journal) every file
# created within a minute or so of many files being deleted costs a scan
# of those deleted inodes in the kernel, under its directory's lock (see
# docs/benchmarks.md, "Deletions and this disk"). A side that creates many
# files (a store of one object per file) pays for it, one that creates a
# few (restic's packs) does not, so nothing is deleted between timed steps:
# every run of the checkpoint and volume rows keeps its sandboxes (each run
# in a Terraform workspace of its own), stores, repositories and restored
# trees until the last run is measured; finish_runs then removes them.
# The checkpoint and volume rows create thousands of files per step. On a
# disk like this machine's (ext4 without a journal), each file created
# after mass deletions costs the kernel a scan of the freed inodes, for a
# minute, or six while their inode table blocks stay dirty (as creating
# files beside them keeps them): "Deletions and this disk" in
# docs/benchmarks.md. So those rows wait SETTLE seconds after the last
# cleanup of a run of this benchmark (finish_runs; recorded in CLEANED)
# rather than measure it.
SETTLE="${SANDBOXER_BENCH_SETTLE:-360}"
if [ "$DISK" = journal ]; then SETTLE="${SANDBOXER_BENCH_SETTLE:-0}"; fi
CLEANED="$HOME/.cache/sandboxer-bench/last-cleanup"
settle_disk() {
	local left
	[ -f "$CLEANED" ] || return 0
	left=$(($(cat "$CLEANED") + SETTLE - $(date +%s)))
	[ "$left" -gt 0 ] || return 0
	log "waiting ${left} s for the disk to settle after the last cleanup (SANDBOXER_BENCH_SETTLE)"
	sleep "$left"
}
kept_runs=() # "checkpoint RUN" or "volume RUN"
run_workspace() { # $1 = directory, $2 = run: that run's Terraform workspace selected
	"$TERRAFORM" -chdir="$1" workspace select -or-create "run-$2" >/dev/null
}
finish_runs() {
	local k kind run cleaned="${#kept_runs[@]}"
	for k in "${kept_runs[@]}"; do
		read -r kind run <<<"$k"
		case "$kind" in
		checkpoint)
			run_workspace "$ck" "$run"
			tf "$ck" destroy -auto-approve "${ssh_vars[@]}" -var "root_dir=$disk/ck-root-$run" "${all_snapshots[@]}"
			rm -rf "$disk/x-$run" "$disk/rx-$run" "$disk/restic-$run" "$disk/restic-cache-$run"
			;;
		volume)
			run_workspace "$vol" "$run"
			tf "$vol" destroy -auto-approve "${ssh_vars[@]}" -var "root_dir=$disk/vol-root-$run" -var "repo=$vrepo" \
				-var "compose_command=$PROVIDER_COMPOSE" "${all_snapshots[@]}"
			docker volume rm -f "bench-tarx-$run" "bench-tarxz-$run" "bench-restic-x-$run" >/dev/null
			rm -rf "$disk/vrestic-$run"
			;;
		esac
	done
	kept_runs=()
	rm -rf "${vdata:-}"
	if [ "$cleaned" -gt 0 ]; then mkdir -p "${CLEANED%/*}" && date +%s >"$CLEANED"; fi
}
# shellcheck disable=SC2317 # run on exit
cleanup_all() {
	tf "$prov" destroy -auto-approve "${common[@]}" -var "n=$N" || true
	tf "$re" destroy -auto-approve "${re_vars[@]}" -var "n=$N" || true
	for d in "${planM:-}" "${plan1:-}"; do [ -z "$d" ] || tf "$d" destroy -auto-approve -parallelism=20 "${common[@]}" || true; done
	finish_runs || true
	[ -z "${tun:-}" ] || [ -z "${tun_vars+x}" ] || tf "$tun" destroy -auto-approve "${tun_vars[@]}" -var measure_script= -var run=destroy || true
	[ -z "${d2:-}" ] || tf "$d2" destroy -auto-approve "${common[@]}" -var "n=$N" -var ttl=1h || true
	floor_down || true
}
devprovider_on_exit cleanup_all

# shellcheck disable=SC2317 # run through timed
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

# The measurements of each run go one per line into a file of $state;
# med[FILE] is their median.
declare -A med
fresh() { local f; for f in "$@"; do : >"$state/$f"; done; }
medians() { local f; for f in "$@"; do med[$f]="$(median <"$state/$f")"; done; }
last() { tail -n1 "$state/$1"; }

# Apply times of checkpoints are counted above a plan of the same
# configuration (Terraform's own start, refresh and planning), which is
# what the provider adds; the rows against restic take the whole apply, as
# users type it.
applied() { # $1 = file for the time above the plan, $2 = for the apply's own, $3 = directory, then variables
	local above="$1" whole="$2" dir="$3" p a
	shift 3
	p="$(timed tf "$dir" plan "$@")"
	sync
	a="$(timed tf "$dir" apply -auto-approve "$@")"
	awk -v a="$a" -v p="$p" 'BEGIN {printf "%.3f\n", a - p}' >>"$state/$above"
	echo "$a" >>"$state/$whole"
}

# restic as users run it: RESTIC_PASSWORD in the environment, the
# repository format of restic >= 0.14 (2) with its default compression.
export RESTIC_PASSWORD=sandboxer-bench
restic_log() { # runs "$@", its output in $state/restic.log (the tail shown on failure)
	"$@" >>"$state/restic.log" 2>&1 || { tail -n 20 "$state/restic.log" >&2; return 1; }
}
if want checkpoint-restic || want volume-restic; then
	command -v restic >/dev/null || die "restic not found; run scripts/harness/install.sh"
	RESTIC_VERSION="$(restic version | awk '{print $2}')"
fi

# ---------------------------------------------------------------- 1, 2, 2b, 4, 4b: apply of N
# Through each sshd wanted, in turns (which goes first alternates run by
# run); every side through the same sshd in its turn.
configs=()
if want apply || want sshd; then configs+=(sftp-server); fi
if want sshd; then configs+=(none); fi
declare -A h_apply h_re
if [ "${#configs[@]}" -gt 0 ]; then
log "apply of $N compose sandboxes ($COMPOSE) through each sshd (${configs[*]}), $RUNS runs per side"
for c in "${configs[@]}"; do fresh "t_prov_$c" "t_re_$c" "t_floor_$c"; done
fresh t_ports
for run in $(seq 1 "$RUNS"); do
	order=("${configs[@]}")
	if [ "${#configs[@]}" = 2 ] && [ $((run % 2)) = 0 ]; then order=("${configs[1]}" "${configs[0]}"); fi
	for c in "${order[@]}"; do
		at=(-var "address=127.0.0.1:${sshd_port[$c]}")
		h0="$(bench_handshakes "$c")"
		timed tf "$prov" apply -auto-approve "${common[@]}" "${at[@]}" -var "n=$N" >>"$state/t_prov_$c"
		h_apply[$c]=$(($(bench_handshakes "$c") - h0))
		tf "$prov" destroy -auto-approve "${common[@]}" "${at[@]}" -var "n=$N"
		h0="$(bench_handshakes "$c")"
		timed tf "$re" apply -auto-approve "${re_vars[@]}" -var "port=${sshd_port[$c]}" -var "n=$N" >>"$state/t_re_$c"
		h_re[$c]=$(($(bench_handshakes "$c") - h0))
		tf "$re" destroy -auto-approve "${re_vars[@]}" -var "port=${sshd_port[$c]}" -var "n=$N"
		timed floor_up >>"$state/t_floor_$c"
		floor_down
		log "run $run, sshd with $c: provider $(last "t_prov_$c") s, remote-exec $(last "t_re_$c") s, shell $(last "t_floor_$c") s"
		if [ "$c" = sftp-server ] && want apply; then
			timed tf "$prov" apply -auto-approve "${common[@]}" -var "repo=$repo_ports" -var "n=$N" >>"$state/t_ports"
			tf "$prov" destroy -auto-approve "${common[@]}" -var "repo=$repo_ports" -var "n=$N"
			log "run $run, sshd with $c: fixed ports and names $(last t_ports) s"
		fi
	done
done
for c in "${configs[@]}"; do medians "t_prov_$c" "t_re_$c" "t_floor_$c"; done
if want apply; then medians t_ports; fi
fi

# ---------------------------------------------------------------- 3, 3b, 4: plan of M + M and of L + L
# One 1 + 1 configuration is the baseline of both sizes: its plans run
# beside each size's, and all of them count in its median.
if want plan; then
log "plan (refresh) of $M and of $L sandboxes + as many snapshots vs 1 + 1"
plan1="$(work plan-1 provider)"
common_m=("${common[@]}" -var "snapshots=true")
tf "$plan1" apply -auto-approve "${common_m[@]}" -var "n=1"
fresh t_plan1 "t_plan_$M" "t_plan_$L"
for size in "$M" "$L"; do
	planM="$(work "plan-$size" provider)"
	tf "$planM" apply -auto-approve -parallelism=20 "${common_m[@]}" -var "n=$size"
	for run in $(seq 1 "$RUNS"); do
		h0="$(bench_handshakes sftp-server)"
		timed tf "$planM" plan -detailed-exitcode "${common_m[@]}" -var "n=$size" >>"$state/t_plan_$size"
		[ "$size" != "$M" ] || h_plan=$(($(bench_handshakes sftp-server) - h0))
		timed tf "$plan1" plan -detailed-exitcode "${common_m[@]}" -var "n=1" >>"$state/t_plan1"
	done
	# Destroyed here, not on exit, so that it is not destroyed twice.
	tf "$planM" destroy -auto-approve -parallelism=20 "${common_m[@]}" -var "n=$size"
	planM=""
done
medians t_plan1 "t_plan_$M" "t_plan_$L"
tf "$plan1" destroy -auto-approve "${common_m[@]}" -var "n=1"
plan1=""
fi

# ---------------------------------------------------------------- 5-8, 15-18: checkpoints
# A workspace sandbox holding CK_FILES files, CK_MIB MiB: half random, half
# text (unique lines, compressible). Each run uses a root directory (and so
# a store) and a restic repository of its own; the agent is installed by an
# untimed first snapshot of the empty workspace, as it is once per host for
# users. The full snapshot, the 1% change, the incremental one and the
# restore of the latest are made once per run; each baseline is timed
# beside them on the same tree.
if want checkpoint || want checkpoint-restic; then
CK_FILES="${SANDBOXER_BENCH_CK_FILES:-5000}"
CK_MIB="${SANDBOXER_BENCH_CK_MIB:-256}"
log "checkpoints of a workspace of $CK_FILES files, $CK_MIB MiB, $RUNS runs"
ck="$(work checkpoint checkpoint)"
settle_disk
per_file=$((CK_MIB * 1048576 / CK_FILES))
fill_workspace() { # $1 = workspace
	mkdir -p "$1/random" "$1/text"
	head -c $((CK_MIB * 524288)) /dev/urandom | (cd "$1/random" && split -b "$per_file" -a 5 - r)
	# seq is cut off by head: its SIGPIPE is expected.
	{ seq -f 'line %.0f of the sandboxer checkpoint benchmark, compressible text' 1 100000000 2>/dev/null || true; } |
		head -c $((CK_MIB * 524288)) | (cd "$1/text" && split -b "$per_file" -a 5 - t)
	# The workspace is the SSH user's: the destroy removes what is in it.
	if [ "$BENCH_USER" != root ]; then chown -R "$BENCH_USER" "$1/random" "$1/text"; fi
}
change_one_percent() { # $1 = workspace: 1% of the files rewritten, half of them random, half text
	local f random text
	mapfile -t random < <(find "$1/random" -type f | sort)
	mapfile -t text < <(find "$1/text" -type f | sort)
	for f in "${random[@]:0:$((CK_FILES / 200))}"; do head -c "$per_file" /dev/urandom >"$f"; done
	for f in "${text[@]:0:$((CK_FILES / 200))}"; do printf 'changed %s\n' "$RANDOM" >>"$f"; done
}
restic_host() { # restic on the host, on this run's repository
	restic_log restic -r "$disk/restic-$run" --cache-dir "$disk/restic-cache-$run" --compression auto "$@"
}
ck_files=(t_full t_inc t_restore w_full w_inc w_restore t_tarx t_gz s_store s_gz r_full r_inc r_restore s_both s_restic)
fresh "${ck_files[@]}"
for run in $(seq 1 "$RUNS"); do
	# On the journalled disk, a run starts right after the last one's
	# deletions (finish_runs), as on a busy host.
	if [ "$DISK" = journal ]; then finish_runs; fi
	ckroot="$(disk_dir "ck-root-$run")"
	run_workspace "$ck" "$run"
	kept_runs+=("checkpoint $run")
	ck_vars=("${ssh_vars[@]}" -var "root_dir=$ckroot")
	tf "$ck" apply -auto-approve "${ck_vars[@]}" -var 'snapshots=["warm"]'
	ws="$("$TERRAFORM" -chdir="$ck" output -raw workspace)"
	fill_workspace "$ws"
	# Every timed step starts with nothing left to write back, so the disk
	# work of one step is never billed to the next.
	if want checkpoint; then
		# The baselines read the data the full snapshot reads.
		rm -f "$disk/ws.tar" && tar -C "$ws" -cf "$disk/ws.tar" .
		sync
		timed sh -c 'tar -C "$1" -cf - . | gzip -1 >"$2"' sh "$ws" "$disk/ws.tar.gz" >>"$state/t_gz"
		stat -c %s "$disk/ws.tar.gz" >>"$state/s_gz"
		rm -f "$disk/ws.tar.gz"
	fi
	if want checkpoint-restic; then
		restic_host init --repository-version 2
		sync
		timed restic_host backup "$ws" >>"$state/r_full"
	fi

	applied t_full w_full "$ck" "${ck_vars[@]}" -var 'snapshots=["warm","full"]'
	du -sb "$ckroot/.sandboxer/store" | cut -f1 >>"$state/s_store"
	change_one_percent "$ws"
	applied t_inc w_inc "$ck" "${ck_vars[@]}" -var 'snapshots=["warm","full","inc"]'
	if want checkpoint-restic; then
		sync
		timed restic_host backup "$ws" >>"$state/r_inc"
		du -sb "$ckroot/.sandboxer/store" | cut -f1 >>"$state/s_both"
		du -sb "$disk/restic-$run" | cut -f1 >>"$state/s_restic"
	fi
	# The restore and its baselines side by side, in turns first: what a
	# file creation costs on ext4 depends on how many files were deleted in
	# the last minutes (see docs/benchmarks.md, "Deletions and this disk"),
	# and every side must meet the same deletions (none is deleted before
	# the run's end).
	restore_baselines() {
		if want checkpoint; then
			mkdir "$disk/x-$run" && sync
			timed tar -C "$disk/x-$run" -xf "$disk/ws.tar" >>"$state/t_tarx"
		fi
		if want checkpoint-restic; then
			sync
			timed restic_host restore latest --target "$disk/rx-$run" >>"$state/r_restore"
		fi
	}
	[ $((run % 2)) = 0 ] || restore_baselines
	applied t_restore w_restore "$ck" "${ck_vars[@]}" "${all_snapshots[@]}"
	[ $((run % 2)) = 1 ] || restore_baselines
	rm -f "$disk/ws.tar"
	msg="full $(last w_full) s ($(last t_full) s above plan), incremental $(last w_inc) s ($(last t_inc) s), restore $(last w_restore) s ($(last t_restore) s); store $(last s_store) B after the full"
	if want checkpoint; then msg="$msg; tar -c | gzip -1 $(last t_gz) s ($(last s_gz) B), tar -x $(last t_tarx) s"; fi
	if want checkpoint-restic; then msg="$msg; restic backup $(last r_full) s, again $(last r_inc) s, restore $(last r_restore) s; after both: store $(last s_both) B, restic $(last s_restic) B"; fi
	log "run $run: $msg"
done
medians "${ck_files[@]}"
fi

# ---------------------------------------------------------------- 9-12, 19-22: volumes
# A compose-checkpoint sandbox whose service mounts the named volume "data",
# filled (through docker, as the data of a service) with VOL_FILES files of
# VOL_MIB MiB, half random, half text. Each run has a root directory (a
# store) and a restic repository of its own; the agent and the provider's
# helper image are put in place by an untimed first snapshot of the empty
# volume, as they are once per host, and so is restic's image.
if want volume || want volume-restic; then
VOL_FILES="${SANDBOXER_BENCH_VOL_FILES:-5000}"
VOL_MIB="${SANDBOXER_BENCH_VOL_MIB:-512}"
log "volume checkpoints: $VOL_FILES files, $VOL_MIB MiB in a named volume, $RUNS runs"
vol="$(work volume volume)"
settle_disk
vrepo="$(devprovider_tmpdir vrepo)"
cat >"$vrepo/compose.yaml" <<YAML
services:
  db:
    image: $SANDBOXER_TEST_IMAGE
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
    volumes: ["data:/data"]
volumes:
  data: {}
YAML
vper_file=$((VOL_MIB * 1048576 / VOL_FILES))
vdata="$(devprovider_tmpdir vdata)"
mkdir -p "$vdata/random" "$vdata/text"
head -c $((VOL_MIB * 524288)) /dev/urandom | (cd "$vdata/random" && split -b "$vper_file" -a 5 - r)
{ seq -f 'line %.0f of the sandboxer volume benchmark, compressible text' 1 100000000 2>/dev/null || true; } |
	head -c $((VOL_MIB * 524288)) | (cd "$vdata/text" && split -b "$vper_file" -a 5 - t)
tar -C "$vdata" -cf "$state/vol.tar" . # $vdata is kept until finish_runs (see "Deletions")
in_volume() { # $1 = volume, then a shell command run on it (stdin passed on)
	local v="$1"
	shift
	docker run --rm -i --network none -v "$v:/v" "$SANDBOXER_TEST_IMAGE" sh -c "$*"
}
if want volume-restic; then
	# The image users would run restic from, built as the harness builds its
	# images: Debian's restic and exactly the libraries ldd names for it.
	RESTIC_IMAGE="sandboxer-bench-restic:$RESTIC_VERSION"
	if ! docker image inspect "$RESTIC_IMAGE" >/dev/null 2>&1; then
		rootfs="$(devprovider_tmpdir restic-rootfs)"
		mkdir -p "$rootfs"/{usr/bin,etc,root,tmp}
		chmod 1777 "$rootfs/tmp"
		cp "$(command -v restic)" "$rootfs/usr/bin/restic"
		ldd "$rootfs/usr/bin/restic" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u |
			while read -r lib; do cp --parents -L "$lib" "$rootfs/"; done
		printf 'root:x:0:0:root:/root:/bin/sh\n' >"$rootfs/etc/passwd"
		printf 'root:x:0:\n' >"$rootfs/etc/group"
		tar -C "$rootfs" -c . | docker import -c 'ENV HOME=/root' -c 'ENTRYPOINT ["/usr/bin/restic"]' - "$RESTIC_IMAGE" >/dev/null ||
			die "docker import of $RESTIC_IMAGE failed"
		rm -rf "$rootfs"
	fi
fi
restic_volume() { # $1 = volume, mounted on /data with the options $2, then restic's arguments: this run's repository
	local v="$1" opts="$2"
	shift 2
	# One hostname for every container, so that a backup finds the one
	# before it as its parent (restic looks for the host's last snapshot).
	restic_log docker run --rm --network none --hostname sandboxer-bench -e RESTIC_PASSWORD \
		-v "$v:/data:$opts" -v "$disk/vrestic-$run:/repo" "$RESTIC_IMAGE" -r /repo --compression auto "$@"
}
v_files=(v_full v_inc v_restore vw_full vw_inc vw_restore v_gz v_tarxz v_tarx v_stored v_changed vr_full vr_inc vr_restore v_store vr_size)
fresh "${v_files[@]}"
for run in $(seq 1 "$RUNS"); do
	if [ "$DISK" = journal ]; then finish_runs; fi
	vroot="$(disk_dir "vol-root-$run")"
	run_workspace "$vol" "$run"
	kept_runs+=("volume $run")
	v_vars=("${ssh_vars[@]}" -var "root_dir=$vroot" -var "repo=$vrepo" -var "compose_command=$PROVIDER_COMPOSE")
	tf "$vol" apply -auto-approve "${v_vars[@]}" -var 'snapshots=["warm"]'
	volume="$("$TERRAFORM" -chdir="$vol" output -raw project)_data"
	in_volume "$volume" 'tar -x -C /v' <"$state/vol.tar"
	sync
	if want volume; then
		timed sh -c 'docker run --rm --network none -v "$1:/v" "$2" tar -c -C /v . | gzip -1 >"$3"' sh "$volume" "$SANDBOXER_TEST_IMAGE" "$state/vol.tar.gz" >>"$state/v_gz"
		# For comparison only: an uncompressed tar of the same data into a fresh volume.
		docker volume create "bench-tarx-$run" >/dev/null && sync
		timed sh -c 'docker run --rm -i --network none -v "$1:/v" "$2" tar -x -C /v <"$3"' sh "bench-tarx-$run" "$SANDBOXER_TEST_IMAGE" "$state/vol.tar" >>"$state/v_tarx"
	fi
	if want volume-restic; then
		mkdir -p "$disk/vrestic-$run"
		restic_volume "$volume" ro init --repository-version 2
		sync
		timed restic_volume "$volume" ro backup /data >>"$state/vr_full"
	fi

	applied v_full vw_full "$vol" "${v_vars[@]}" -var 'snapshots=["warm","full"]'
	# 1% of the files rewritten: half of them random (whole file), half text (a line added).
	in_volume "$volume" "cd /v && n=$((VOL_FILES / 200)) && for f in \$(ls random | sed -n 1,\${n}p); do head -c $vper_file /dev/urandom >random/\$f; done &&
		for f in \$(ls text | sed -n 1,\${n}p); do echo changed >>text/\$f; done"
	echo $(((VOL_FILES / 200) * (vper_file + 8))) >>"$state/v_changed"
	applied v_inc vw_inc "$vol" "${v_vars[@]}" -var 'snapshots=["warm","full","inc"]'
	"$TERRAFORM" -chdir="$vol" state show -no-color 'sandboxer_snapshot.s["inc"]' | awk '$1 == "stored_bytes" {print $3}' >>"$state/v_stored"
	if want volume-restic; then
		sync
		timed restic_volume "$volume" ro backup /data >>"$state/vr_inc"
		du -sb "$vroot/.sandboxer/store" | cut -f1 >>"$state/v_store"
		du -sb "$disk/vrestic-$run" | cut -f1 >>"$state/vr_size"
	fi
	# The restores matching those captures, each into a fresh volume: the
	# recipe's .tar.gz unpacked, and restic's restore of its latest
	# snapshot; side by side with the restore and in turns first (as for
	# the workspace restore above).
	vol_restore_baselines() {
		if want volume; then
			docker volume create "bench-tarxz-$run" >/dev/null && sync
			timed sh -c 'gzip -dc "$3" | docker run --rm -i --network none -v "$1:/v" "$2" tar -x -C /v' sh "bench-tarxz-$run" "$SANDBOXER_TEST_IMAGE" "$state/vol.tar.gz" >>"$state/v_tarxz"
		fi
		if want volume-restic; then
			docker volume create "bench-restic-x-$run" >/dev/null && sync
			timed restic_volume "bench-restic-x-$run" rw restore latest --target / >>"$state/vr_restore"
		fi
	}
	[ $((run % 2)) = 0 ] || vol_restore_baselines
	applied v_restore vw_restore "$vol" "${v_vars[@]}" "${all_snapshots[@]}"
	[ $((run % 2)) = 1 ] || vol_restore_baselines
	rm -f "$state/vol.tar.gz"
	msg="volume full $(last vw_full) s ($(last v_full) s above plan), incremental $(last vw_inc) s ($(last v_inc) s; $(last v_stored) B stored of $(last v_changed) B changed), restore $(last vw_restore) s ($(last v_restore) s)"
	if want volume; then msg="$msg; docker run tar | gzip -1 $(last v_gz) s, gzip -dc | tar -x $(last v_tarxz) s, tar -x (uncompressed) $(last v_tarx) s"; fi
	if want volume-restic; then msg="$msg; restic backup $(last vr_full) s, again $(last vr_inc) s, restore $(last vr_restore) s; after both: store $(last v_store) B, restic $(last vr_size) B"; fi
	log "run $run: $msg"
done
rm -f "$state/vol.tar"
medians "${v_files[@]}"
fi

# ---------------------------------------------------------------- 13, 14: tunnels
# A compose sandbox whose two services publish nothing: "source" sends
# TUN_MIB MiB on each connection, then closes it; "accept" closes each
# connection at once. Each run opens `ssh -N -L` forwards of both services'
# ports (to the containers' addresses, over the benchmark's sshd), then
# applies scripts/bench/apply/tunnel, whose local-exec provisioner runs
# scripts/bench/apply/tunnel/measure.sh while two sandboxer_tunnel to the
# same ports are open: it times both sides in turns (Terraform's start,
# the tunnels' opening and ssh's are not timed). The sandbox is made by an
# untimed first apply.
if want tunnel; then
TUN_MIB="${SANDBOXER_BENCH_TUN_MIB:-256}"
TUN_CONNS="${SANDBOXER_BENCH_TUN_CONNS:-50}"
log "tunnels: $TUN_MIB MiB and $TUN_CONNS connections through sandboxer_tunnel and ssh -L, $RUNS runs"
tun="$(work tunnel tunnel)"
trepo="$(devprovider_tmpdir trepo)"
cat >"$trepo/compose.yaml" <<YAML
services:
  source:
    image: $SANDBOXER_TEST_IMAGE
    command: ["nc", "-ll", "-p", "9000", "-e", "dd", "if=/dev/zero", "bs=1M", "count=$TUN_MIB", "status=none"]
    stop_signal: SIGKILL
  accept:
    image: $SANDBOXER_TEST_IMAGE
    command: ["nc", "-ll", "-p", "9001", "-e", "true"]
    stop_signal: SIGKILL
YAML
listening() { [ -n "$(ss -Hltn "sport = :$1")" ]; }
free_port() { # a port nothing listens on, from $1 up
	local p="$1"
	while listening "$p"; do p=$((p + 1)); done
	printf '%s\n' "$p"
}
lport_source="$(free_port $((PORT + 100)))"
lport_accept="$(free_port $((lport_source + 1)))"
tun_vars=("${ssh_vars[@]}" -var "root_dir=$root" -var "repo=$trepo" -var "compose_command=$PROVIDER_COMPOSE"
	-var "bytes=$((TUN_MIB * 1048576))" -var "conns=$TUN_CONNS" -var "out=$state/tun.out"
	-var "ssh_source=127.0.0.1:$lport_source" -var "ssh_accept=127.0.0.1:$lport_accept")
tf "$tun" apply -auto-approve "${tun_vars[@]}" -var measure_script= -var run=make
tproject="$("$TERRAFORM" -chdir="$tun" output -raw compose_project)"
container_ip() { # $1 = service of the sandbox: its container's address
	local id
	id="$(docker ps -q --filter "label=com.docker.compose.project=$tproject" --filter "label=com.docker.compose.service=$1")"
	docker inspect --format '{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}' "$id" | awk '{print $1}'
}
source_ip="$(container_ip source)" accept_ip="$(container_ip accept)"
if [ -z "$source_ip" ] || [ -z "$accept_ip" ]; then die "no container address for the services of $tproject"; fi
ssh_pid=""
stop_ssh_l() { [ -z "$ssh_pid" ] || { kill "$ssh_pid" 2>/dev/null; wait "$ssh_pid" 2>/dev/null; ssh_pid=""; } || true; }
devprovider_on_exit stop_ssh_l
tn_files=(tn_tun_put tn_tun_alone tn_tun_p90 tn_tun_b2b tn_ssh_put tn_ssh_alone tn_ssh_p90 tn_ssh_b2b)
fresh "${tn_files[@]}"
for run in $(seq 1 "$RUNS"); do
	ssh -N -o BatchMode=yes -o ExitOnForwardFailure=yes -o UserKnownHostsFile="$state/known_hosts" -i "$SANDBOXER_TEST_SSH_KEY" -p "$PORT" \
		-L "127.0.0.1:$lport_source:$source_ip:9000" -L "127.0.0.1:$lport_accept:$accept_ip:9001" "$BENCH_USER@127.0.0.1" &
	ssh_pid=$!
	for _ in $(seq 1 100); do
		listening "$lport_source" && listening "$lport_accept" && break
		kill -0 "$ssh_pid" 2>/dev/null || die "ssh -L exited; see $state/sshd-sftp-server.log"
		sleep 0.1
	done
	if ! listening "$lport_source" || ! listening "$lport_accept"; then die "ssh -L did not listen on ports $lport_source and $lport_accept within 10 s"; fi
	rm -f "$state/tun.out"
	tf "$tun" apply -auto-approve "${tun_vars[@]}" -var "measure_script=$REPO_ROOT/scripts/bench/apply/tunnel/measure.sh" -var "run=$run"
	stop_ssh_l
	while read -r side put alone p90 b2b; do
		case "$side" in tunnel) side=tun ;; ssh) ;; *) die "unexpected line in $state/tun.out: $side" ;; esac
		echo "$put" >>"$state/tn_${side}_put" && echo "$alone" >>"$state/tn_${side}_alone" && echo "$p90" >>"$state/tn_${side}_p90" && echo "$b2b" >>"$state/tn_${side}_b2b"
	done <"$state/tun.out"
	log "run $run: $TUN_MIB MiB sandboxer_tunnel $(last tn_tun_put) s, ssh -L $(last tn_ssh_put) s; one connection alone $(last tn_tun_alone) s, $(last tn_ssh_alone) s (90th percentile $(last tn_tun_p90) s, $(last tn_ssh_p90) s); back to back $(last tn_tun_b2b) s, $(last tn_ssh_b2b) s"
done
medians "${tn_files[@]}"
tf "$tun" destroy -auto-approve "${tun_vars[@]}" -var measure_script= -var run=destroy
tun=""
ms() { awk -v s="$1" 'BEGIN {printf "%.2f", s * 1000}'; }
mibps() { awk -v s="$1" -v m="$TUN_MIB" 'BEGIN {printf "%.0f", m / s}'; }
fi

# ---------------------------------------------------------------- 23-25: day two
# The N sandboxes of row 1, stopped and started in place by applies, beside
# N floor stacks stopped and started by parallel shells; then a command in
# the first sandbox's service through `terraform apply -invoke`.
if want daytwo; then
log "day two: stop and start of $N sandboxes in place, a command through apply -invoke, $RUNS runs"
d2="$(work daytwo provider)"
tf "$d2" apply -auto-approve "${common[@]}" -var "n=$N" -var ttl=1h
floor_up
floor_shell() { # $1 = stop or start: each floor stack, in parallel
	local i
	for i in $(seq 1 "$N"); do
		(cd "$root/fl-$i" && $COMPOSE -p "bench-fl-$i" "$1" >/dev/null 2>&1) &
	done
	wait
}
fresh d2_stop d2_start d2_fstop d2_fstart d2_touch d2_login
for run in $(seq 1 "$RUNS"); do
	timed tf "$d2" apply -auto-approve "${common[@]}" -var "n=$N" -var ttl=1h -var desired_state=stopped >>"$state/d2_stop"
	timed floor_shell stop >>"$state/d2_fstop"
	timed tf "$d2" apply -auto-approve "${common[@]}" -var "n=$N" -var ttl=1h >>"$state/d2_start"
	timed floor_shell start >>"$state/d2_fstart"
	# Everything of those applies but the stops and starts: an apply that
	# changes only each record (ttl, there and back): Terraform's start,
	# both walks' provider processes and SSH connections, the refresh of
	# the ten and one host command each.
	timed tf "$d2" apply -auto-approve "${common[@]}" -var "n=$N" -var ttl=2h >>"$state/d2_touch"
	timed tf "$d2" apply -auto-approve "${common[@]}" -var "n=$N" -var ttl=1h >>"$state/d2_touch"
	# What the SSH user's login shell costs each session: an apply pays it
	# once per walk (each walk is a provider process with its connection).
	timed ssh -p "$PORT" -i "$SANDBOXER_TEST_SSH_KEY" -o BatchMode=yes -o UserKnownHostsFile="$state/known_hosts" \
		"$BENCH_USER@127.0.0.1" true >>"$state/d2_login"
	log "run $run: stop $(last d2_stop) s (shell $(last d2_fstop) s), start $(last d2_start) s (shell $(last d2_fstart) s), a record change $(last d2_touch) s, ssh true $(last d2_login) s"
done
medians d2_stop d2_start d2_fstop d2_fstart d2_touch d2_login
d2_exec=""
tfv="$("$TERRAFORM" version | sed -n 1p)"
if [[ "$tfv" =~ ^Terraform\ v1\.([0-9]+)\. ]] && [ "${BASH_REMATCH[1]}" -ge 14 ]; then
	d2_exec=1
	ex="$(work exec exec)"
	first="$("$TERRAFORM" -chdir="$d2" output -json first)"
	sid="$(printf '%s' "$first" | sed -n 's/.*"id":"\([0-9a-f]*\)".*/\1/p')"
	project="$(printf '%s' "$first" | sed -n 's/.*"project":"\([a-z0-9-]*\)".*/\1/p')"
	ex_vars=("${ssh_vars[@]}" -var "root_dir=$root" -var "compose_command=$PROVIDER_COMPOSE" -var "sandbox_id=$sid")
	by_hand() {
		ssh -p "$PORT" -i "$SANDBOXER_TEST_SSH_KEY" -o BatchMode=yes -o UserKnownHostsFile="$state/known_hosts" \
			"$BENCH_USER@127.0.0.1" "$COMPOSE -p $project exec -T app true"
	}
	fresh d2_invoke d2_noop d2_hand
	for run in $(seq 1 "$RUNS"); do
		timed tf "$ex" apply -auto-approve "${ex_vars[@]}" -invoke=action.sandboxer_exec.true >>"$state/d2_invoke"
		timed tf "$ex" apply -auto-approve "${ex_vars[@]}" -invoke=action.sandboxer_extend.noop >>"$state/d2_noop"
		timed by_hand >>"$state/d2_hand"
		log "run $run: invoke of exec $(last d2_invoke) s, of a no-op $(last d2_noop) s, by hand $(last d2_hand) s"
	done
	medians d2_invoke d2_noop d2_hand
	med[d2_exec]="$(awk -v a="${med[d2_invoke]}" -v b="${med[d2_noop]}" 'BEGIN {printf "%.3f", a - b}')"
else
	log "row 25 skipped: $tfv has no actions (Terraform >= 1.14: TERRAFORM=...)"
fi
tf "$d2" destroy -auto-approve "${common[@]}" -var "n=$N" -var ttl=1h
d2=""
floor_down
fi

# ---------------------------------------------------------------- 26-31: across a network
if want network; then
	# shellcheck source=scripts/lib/bench-network.sh
	. "$REPO_ROOT/scripts/lib/bench-network.sh"
	network_measure
fi

finish_runs

# ---------------------------------------------------------------- report
mib() { awk -v b="$1" 'BEGIN {printf "%.1f", b / 1048576}'; }
title="bench-apply.sh: $("$TERRAFORM" version | sed -n 1p), $($COMPOSE version --short 2>/dev/null || $COMPOSE version | sed -n 1p) ($COMPOSE)"
if want checkpoint-restic || want volume-restic; then title="$title, restic $RESTIC_VERSION"; fi
bench_table "$title, $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), medians of $RUNS, SSH user $BENCH_USER; sshd: sftp-server = \`Subsystem sftp $BENCH_SFTP_SERVER\`, none = no Subsystem line"
for c in "${configs[@]}"; do
	BENCH_SSHD="$c"
	row "apply of $N sandboxes vs remote-exec" "${med[t_prov_$c]}" "${med[t_re_$c]}" 0.5
	row "apply of $N sandboxes vs $N parallel shell mkdir; cp; compose up -d" "${med[t_prov_$c]}" "${med[t_floor_$c]}" 1.5
	count "SSH handshakes, apply of $N (remote-exec: ${h_re[$c]})" "${h_apply[$c]}" 1
	if [ "$c" = sftp-server ] && want apply; then
		row "apply of $N copies of a stack with a fixed container_name and host port (rendered) vs of $N without" "${med[t_ports]}" "${med[t_prov_$c]}" 1.1
	fi
done
if want sshd; then
	BENCH_SSHD="none vs sftp-server"
	row "apply of $N sandboxes, host without an sftp subsystem vs with one" "${med[t_prov_none]}" "${med[t_prov_sftp-server]}" 1.1
fi
BENCH_SSHD="sftp-server"
if want plan; then
	row "plan of $M sandboxes + $M snapshots vs 1 + 1" "${med[t_plan_$M]}" "${med[t_plan1]}" 2
	row "plan of $L sandboxes + $L snapshots vs 1 + 1" "${med[t_plan_$L]}" "${med[t_plan1]}" 3
	count "SSH handshakes, plan of $M + $M" "$h_plan" 1
fi
if want checkpoint-restic; then
	row "full checkpoint ($CK_FILES files, $CK_MIB MiB, half random): terraform apply vs restic backup into a new repository" "${med[w_full]}" "${med[r_full]}" 1.0
	row "incremental checkpoint after 1% of files changed: terraform apply vs a second restic backup" "${med[w_inc]}" "${med[r_inc]}" 1.0
	row "restore into a new place: terraform apply of a restore into a new sandbox vs restic restore latest --target DIR" "${med[w_restore]}" "${med[r_restore]}" 1.0
	row "bytes stored after both checkpoints: the store vs the restic repository" "$(mib "${med[s_both]}")" "$(mib "${med[s_restic]}")" 1.0 MiB
fi
if want checkpoint; then
	row "incremental snapshot after 1% of files changed vs the full snapshot (apply above plan)" "${med[t_inc]}" "${med[t_full]}" 0.15
	row "full snapshot (apply above plan) vs tar -c \\| gzip -1 of the workspace" "${med[t_full]}" "${med[t_gz]}" 0.3
	row "restore into a new sandbox (apply above plan) vs tar -x of the same data" "${med[t_restore]}" "${med[t_tarx]}" 0.8
	row "store size of the full snapshot vs its tar -c \\| gzip -1 ($CK_FILES files, $CK_MIB MiB, half random)" "$(mib "${med[s_store]}")" "$(mib "${med[s_gz]}")" 1.0 MiB
fi
if want volume-restic; then
	row "volume checkpoint ($VOL_FILES files, $VOL_MIB MiB): terraform apply vs docker run restic backup into a new repository" "${med[vw_full]}" "${med[vr_full]}" 1.0
	row "incremental volume checkpoint after 1% of files changed: terraform apply vs a second docker run restic backup" "${med[vw_inc]}" "${med[vr_inc]}" 1.0
	row "restore into a new sandbox with a new volume: terraform apply vs docker run restic restore latest into a fresh volume" "${med[vw_restore]}" "${med[vr_restore]}" 1.0
	row "volume: bytes stored after both checkpoints: the store vs the restic repository" "$(mib "${med[v_store]}")" "$(mib "${med[vr_size]}")" 1.0 MiB
fi
if want volume; then
	row "volume snapshot ($VOL_FILES files, $VOL_MIB MiB; apply above plan) vs docker run tar -c \\| gzip -1" "${med[v_full]}" "${med[v_gz]}" 1.0
	row "restore into a new sandbox with a new volume (apply above plan) vs gzip -dc \\| docker run tar -x of that .tar.gz into a fresh volume" "${med[v_restore]}" "${med[v_tarxz]}" 1.0
	info "the same restore vs docker run tar -x of an uncompressed tar into a fresh volume (no goal)" "${med[v_restore]}" "${med[v_tarx]}"
	row "incremental volume snapshot after 1% of files changed vs the full one (apply above plan)" "${med[v_inc]}" "${med[v_full]}" 0.15
	row "incremental volume snapshot: stored bytes vs bytes changed" "${med[v_stored]}" "${med[v_changed]}" 1.1 B
fi
if want tunnel; then
	row "tunnel throughput, $TUN_MIB MiB: sandboxer_tunnel ($(mibps "${med[tn_tun_put]}") MiB/s) vs ssh -L ($(mibps "${med[tn_ssh_put]}") MiB/s), time" "${med[tn_tun_put]}" "${med[tn_ssh_put]}" 1.11
	row "tunnel connection setup vs ssh -L, connections opened alone (median of $TUN_CONNS)" "$(ms "${med[tn_tun_alone]}")" "$(ms "${med[tn_ssh_alone]}")" 1.2 ms
	info "the same, 90th percentile (no goal)" "$(ms "${med[tn_tun_p90]}")" "$(ms "${med[tn_ssh_p90]}")" ms
	info "the same, back to back (no goal; each ssh -N open waits for the delayed ACK of the close before)" "$(ms "${med[tn_tun_b2b]}")" "$(ms "${med[tn_ssh_b2b]}")" ms
fi
if want daytwo; then
	row "apply stopping $N sandboxes in place vs $N parallel shell compose stop" "${med[d2_stop]}" "${med[d2_fstop]}" 1.5
	row "apply starting them again, ready, vs $N parallel shell compose start" "${med[d2_start]}" "${med[d2_fstart]}" 1.5
	# A stop through Terraform is an apply changing each record, plus the
	# same compose stops: that sum over the shell's is the least row 23
	# can be, row 24 likewise.
	info "the least row 23 can be: an apply changing only the records (${med[d2_touch]} s) plus the shell's stop, vs the shell's stop" \
		"$(awk -v a="${med[d2_touch]}" -v b="${med[d2_fstop]}" 'BEGIN {printf "%.3f", a + b}')" "${med[d2_fstop]}"
	info "the least row 24 can be: the same plus the shell's start, vs the shell's start" \
		"$(awk -v a="${med[d2_touch]}" -v b="${med[d2_fstart]}" 'BEGIN {printf "%.3f", a + b}')" "${med[d2_fstart]}"
	info "ssh host true as $BENCH_USER (its login shell; an apply starts two SSH connections) vs the shell's stop" "${med[d2_login]}" "${med[d2_fstop]}"
	if [ -n "$d2_exec" ]; then
		row "sandboxer_exec of true: apply -invoke (${med[d2_invoke]} s) minus a no-op invoke (${med[d2_noop]} s) vs ssh host $COMPOSE exec -T app true" "${med[d2_exec]}" "${med[d2_hand]}" 1.2
	fi
fi
if want network; then network_report; fi
exit "$bench_missed"
