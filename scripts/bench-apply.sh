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
#  4b. `terraform apply` of N copies of a stack with a fixed container_name
#        and a fixed host port (each rendered: free port, scoped name)
#        vs the apply of N stacks without                        goal <= 1.1x
#   5. `terraform apply` adding an incremental snapshot after 1% of the files
#        of a workspace changed (default 5,000 files, 256 MiB, half random)
#        vs the full snapshot's, each counted above a plan      goal <= 0.15x
#   6. the full snapshot's apply (above a plan) vs `tar -c | gzip -1`
#        of the workspace                                        goal <= 0.3x
#   7. `terraform apply` of a restore into a new sandbox (above a plan)
#        vs `tar -x` of the same data                            goal <= 0.8x
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
#
# Medians of SANDBOXER_BENCH_RUNS (3) runs, each side timed in turn, so load
# on the host weighs on all of them alike. Prints a table and exits 1 when a
# goal is missed. Results and method: docs/benchmarks.md.
#
#   bash scripts/bench-apply.sh
#   SANDBOXER_BENCH_N=4 SANDBOXER_BENCH_M=10 SANDBOXER_BENCH_RUNS=1 bash scripts/bench-apply.sh   # quick
#   SANDBOXER_BENCH_ROWS=checkpoint bash scripts/bench-apply.sh   # rows 5-8 only
#   SANDBOXER_BENCH_ROWS=volume bash scripts/bench-apply.sh       # rows 9-12 only
#   SANDBOXER_BENCH_ROWS=tunnel bash scripts/bench-apply.sh       # rows 13-14 only
#
# Settings: SANDBOXER_BENCH_ROWS (apply = 1, 2 and 4; plan = 3 and 4;
# checkpoint = 5-8; volume = 9-12; tunnel = 13-14; default all),
# SANDBOXER_BENCH_N, _M, _RUNS, SANDBOXER_BENCH_CK_FILES, _CK_MIB, _VOL_FILES,
# _VOL_MIB, _TUN_MIB, _TUN_CONNS, SANDBOXER_BENCH_COMPOSE (the compose
# command on every side; default `docker compose`, v2, as on users' hosts),
# SANDBOXER_BENCH_SSH_PORT (the benchmark's sshd, default 2298),
# SANDBOXER_BENCH_TRACE (a directory: each terraform step's provider log at
# DEBUG, with every host command and its duration, goes there; slower). Needs the
# harness: scripts/harness/install.sh and up.sh, as root.
set -euo pipefail

# shellcheck source=scripts/lib/devprovider.sh
. "$(dirname "$0")/lib/devprovider.sh"

N="${SANDBOXER_BENCH_N:-10}"
M="${SANDBOXER_BENCH_M:-50}"
RUNS="${SANDBOXER_BENCH_RUNS:-3}"
COMPOSE="${SANDBOXER_BENCH_COMPOSE:-docker compose}"
PORT="${SANDBOXER_BENCH_SSH_PORT:-2298}"
ROWS="${SANDBOXER_BENCH_ROWS:-apply,plan,checkpoint,volume,tunnel}"
want() { case ",$ROWS," in *",$1,"*) return 0 ;; esac; return 1; }

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

work() { # $1 = name of a scratch copy of scripts/bench/apply/$2
	local dir
	dir="$(devprovider_tmpdir "$1")"
	cp "$REPO_ROOT/scripts/bench/apply/$2/main.tf" "$dir/"
	printf '%s\n' "$dir"
}
tf() {
	local dir="$1"
	shift
	if [ -n "${SANDBOXER_BENCH_TRACE:-}" ]; then
		# Where the time goes: the provider's per-command log of every step.
		mkdir -p "$SANDBOXER_BENCH_TRACE"
		TF_LOG_PROVIDER=DEBUG TF_LOG_PATH="$SANDBOXER_BENCH_TRACE/$(date +%s.%N)-$(basename "$dir")-$1.log" \
			"$TERRAFORM" -chdir="$dir" "$@" -no-color >"$dir/last.log" 2>&1 || { tail -n 30 "$dir/last.log" >&2; return 1; }
		return 0
	fi
	"$TERRAFORM" -chdir="$dir" "$@" -no-color >"$dir/last.log" 2>&1 || { tail -n 30 "$dir/last.log" >&2; return 1; }
}
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
	[ -z "${vol:-}" ] || [ -z "${v_vars+x}" ] || tf "$vol" destroy -auto-approve "${v_vars[@]}" -var 'snapshots=["warm","full","inc"]' -var restore=full || true
	[ -z "${ck:-}" ] || [ -z "${ck_vars+x}" ] || tf "$ck" destroy -auto-approve "${ck_vars[@]}" -var 'snapshots=["warm","full","inc"]' -var restore=full || true
	[ -z "${tun:-}" ] || [ -z "${tun_vars+x}" ] || tf "$tun" destroy -auto-approve "${tun_vars[@]}" -var measure_script= -var run=destroy || true
	floor_down || true
	docker volume rm -f bench-tarx bench-tarxz >/dev/null 2>&1 || true
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

# Apply times of checkpoints are counted above a plan of the same
# configuration (Terraform's own start, refresh and planning), which is
# what the provider adds.
above_plan() { # $1 = directory, then variables: prints apply time minus plan time
	local dir="$1" p a
	shift
	p="$(timed tf "$dir" plan "$@")"
	sync
	a="$(timed tf "$dir" apply -auto-approve "$@")"
	awk -v a="$a" -v p="$p" 'BEGIN {printf "%.3f\n", a - p}'
}

# ---------------------------------------------------------------- 1, 2, 4: apply of N
if want apply; then
log "apply of $N compose sandboxes ($COMPOSE), $RUNS runs per side"
: >"$state/t_prov" && : >"$state/t_re" && : >"$state/t_floor" && : >"$state/t_ports"
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
	timed tf "$prov" apply -auto-approve "${common[@]}" -var "repo=$repo_ports" -var "n=$N" >>"$state/t_ports"
	tf "$prov" destroy -auto-approve "${common[@]}" -var "repo=$repo_ports" -var "n=$N"
	log "run $run: provider $(tail -n1 "$state/t_prov") s, remote-exec $(tail -n1 "$state/t_re") s, shell $(tail -n1 "$state/t_floor") s, fixed ports and names $(tail -n1 "$state/t_ports") s"
done
t_prov="$(median <"$state/t_prov")" t_re="$(median <"$state/t_re")" t_floor="$(median <"$state/t_floor")" t_ports="$(median <"$state/t_ports")"
fi

# ---------------------------------------------------------------- 3, 4: plan of M + M
if want plan; then
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
fi

# ---------------------------------------------------------------- 5-8: checkpoints
# A workspace sandbox holding CK_FILES files, CK_MIB MiB: half random, half
# text (unique lines, compressible). Each run uses a root directory (and so
# a store) of its own; the agent is installed by an untimed first snapshot
# of the empty workspace, as it is once per host for users. Apply times are
# counted above a plan of the same configuration (Terraform's own start,
# refresh and planning), which is what the provider adds.
if want checkpoint; then
CK_FILES="${SANDBOXER_BENCH_CK_FILES:-5000}"
CK_MIB="${SANDBOXER_BENCH_CK_MIB:-256}"
log "checkpoints of a workspace of $CK_FILES files, $CK_MIB MiB, $RUNS runs"
ck="$(work checkpoint checkpoint)"
per_file=$((CK_MIB * 1048576 / CK_FILES))
fill_workspace() { # $1 = workspace
	mkdir -p "$1/random" "$1/text"
	head -c $((CK_MIB * 524288)) /dev/urandom | (cd "$1/random" && split -b "$per_file" -a 5 - r)
	# seq is cut off by head: its SIGPIPE is expected.
	{ seq -f 'line %.0f of the sandboxer checkpoint benchmark, compressible text' 1 100000000 2>/dev/null || true; } |
		head -c $((CK_MIB * 524288)) | (cd "$1/text" && split -b "$per_file" -a 5 - t)
}
change_one_percent() { # $1 = workspace: 1% of the files rewritten, half of them random, half text
	local f random text
	mapfile -t random < <(find "$1/random" -type f | sort)
	mapfile -t text < <(find "$1/text" -type f | sort)
	for f in "${random[@]:0:$((CK_FILES / 200))}"; do head -c "$per_file" /dev/urandom >"$f"; done
	for f in "${text[@]:0:$((CK_FILES / 200))}"; do printf 'changed %s\n' "$RANDOM" >>"$f"; done
}
for f in t_full t_inc t_restore t_tarx t_gz s_store s_gz; do : >"$state/$f"; done
for run in $(seq 1 "$RUNS"); do
	ckroot="$(devprovider_tmpdir "ck-root-$run")"
	ck_vars=(-var "address=127.0.0.1:$PORT" -var "user=$SANDBOXER_TEST_SSH_USER" -var "private_key_file=$SANDBOXER_TEST_SSH_KEY"
		-var "known_hosts_file=$state/known_hosts" -var "root_dir=$ckroot")
	tf "$ck" apply -auto-approve "${ck_vars[@]}" -var 'snapshots=["warm"]'
	ws="$("$TERRAFORM" -chdir="$ck" output -raw workspace)"
	fill_workspace "$ws"
	# The baselines read the data the full snapshot reads.
	rm -f "$state/ws.tar" && tar -C "$ws" -cf "$state/ws.tar" .
	# Every timed step starts with nothing left to write back, so the disk
	# work of one step is never billed to the next.
	sync
	timed sh -c 'tar -C "$1" -cf - . | gzip -1 >"$2"' sh "$ws" "$state/ws.tar.gz" >>"$state/t_gz"
	stat -c %s "$state/ws.tar.gz" >>"$state/s_gz"
	rm -f "$state/ws.tar.gz"

	above_plan "$ck" "${ck_vars[@]}" -var 'snapshots=["warm","full"]' >>"$state/t_full"
	du -sb "$ckroot/.sandboxer/store" | cut -f1 >>"$state/s_store"
	change_one_percent "$ws"
	above_plan "$ck" "${ck_vars[@]}" -var 'snapshots=["warm","full","inc"]' >>"$state/t_inc"
	# The restore and its baseline side by side, in turns first: what a
	# file creation costs on ext4 depends on how many files were deleted in
	# the last minutes (see docs/benchmarks.md, "Restores and this disk"),
	# and both sides must meet the same deletions.
	tar_x() {
		rm -rf "$state/x" && mkdir "$state/x" && sync
		timed tar -C "$state/x" -xf "$state/ws.tar" >>"$state/t_tarx"
	}
	[ $((run % 2)) = 0 ] || tar_x
	above_plan "$ck" "${ck_vars[@]}" -var 'snapshots=["warm","full","inc"]' -var restore=full >>"$state/t_restore"
	[ $((run % 2)) = 1 ] || tar_x
	rm -rf "$state/x" "$state/ws.tar"
	tf "$ck" destroy -auto-approve "${ck_vars[@]}" -var 'snapshots=["warm","full","inc"]' -var restore=full
	log "run $run: full $(tail -n1 "$state/t_full") s, incremental $(tail -n1 "$state/t_inc") s, restore $(tail -n1 "$state/t_restore") s; tar -c | gzip -1 $(tail -n1 "$state/t_gz") s, tar -x $(tail -n1 "$state/t_tarx") s; store $(tail -n1 "$state/s_store") B, gzip $(tail -n1 "$state/s_gz") B"
done
for f in t_full t_inc t_restore t_tarx t_gz s_store s_gz; do printf -v "$f" '%s' "$(median <"$state/$f")"; done
mib() { awk -v b="$1" 'BEGIN {printf "%.1f", b / 1048576}'; }
fi

# ---------------------------------------------------------------- 9-12: volumes
# A compose-checkpoint sandbox whose service mounts the named volume "data",
# filled (through docker, as the data of a service) with VOL_FILES files of
# VOL_MIB MiB, half random, half text. Each run has a root directory (a
# store) of its own; the agent and the helper image are put in place by an
# untimed first snapshot of the empty volume, as they are once per host.
if want volume; then
VOL_FILES="${SANDBOXER_BENCH_VOL_FILES:-5000}"
VOL_MIB="${SANDBOXER_BENCH_VOL_MIB:-512}"
log "volume checkpoints: $VOL_FILES files, $VOL_MIB MiB in a named volume, $RUNS runs"
vol="$(work volume volume)"
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
tar -C "$vdata" -cf "$state/vol.tar" . && rm -rf "$vdata"
in_volume() { # $1 = volume, then a shell command run on it (stdin passed on)
	local v="$1"
	shift
	docker run --rm -i --network none -v "$v:/v" "$SANDBOXER_TEST_IMAGE" sh -c "$*"
}
for f in v_full v_inc v_restore v_gz v_tarxz v_tarx v_stored v_changed; do : >"$state/$f"; done
for run in $(seq 1 "$RUNS"); do
	vroot="$(devprovider_tmpdir "vol-root-$run")"
	v_vars=(-var "address=127.0.0.1:$PORT" -var "user=$SANDBOXER_TEST_SSH_USER" -var "private_key_file=$SANDBOXER_TEST_SSH_KEY"
		-var "known_hosts_file=$state/known_hosts" -var "root_dir=$vroot" -var "repo=$vrepo" -var "compose_command=$COMPOSE")
	tf "$vol" apply -auto-approve "${v_vars[@]}" -var 'snapshots=["warm"]'
	volume="$("$TERRAFORM" -chdir="$vol" output -raw project)_data"
	in_volume "$volume" 'tar -x -C /v' <"$state/vol.tar"
	sync
	timed sh -c 'docker run --rm --network none -v "$1:/v" "$2" tar -c -C /v . | gzip -1 >"$3"' sh "$volume" "$SANDBOXER_TEST_IMAGE" "$state/vol.tar.gz" >>"$state/v_gz"
	# For comparison only: an uncompressed tar of the same data into a fresh volume.
	docker volume create bench-tarx >/dev/null && sync
	timed sh -c 'docker run --rm -i --network none -v bench-tarx:/v "$1" tar -x -C /v <"$2"' sh "$SANDBOXER_TEST_IMAGE" "$state/vol.tar" >>"$state/v_tarx"
	docker volume rm bench-tarx >/dev/null

	above_plan "$vol" "${v_vars[@]}" -var 'snapshots=["warm","full"]' >>"$state/v_full"
	# 1% of the files rewritten: half of them random (whole file), half text (a line added).
	in_volume "$volume" "cd /v && n=$((VOL_FILES / 200)) && for f in \$(ls random | head -n \$n); do head -c $vper_file /dev/urandom >random/\$f; done &&
		for f in \$(ls text | head -n \$n); do echo changed >>text/\$f; done"
	echo $(((VOL_FILES / 200) * (vper_file + 8))) >>"$state/v_changed"
	above_plan "$vol" "${v_vars[@]}" -var 'snapshots=["warm","full","inc"]' >>"$state/v_inc"
	"$TERRAFORM" -chdir="$vol" state show -no-color 'sandboxer_snapshot.s["inc"]' | awk '$1 == "stored_bytes" {print $3}' >>"$state/v_stored"
	# The restore matching that capture: its .tar.gz unpacked into a fresh
	# volume, side by side with the restore and in turns first (as for the
	# workspace restore above).
	vol_tarxz() {
		docker volume create bench-tarxz >/dev/null && sync
		timed sh -c 'gzip -dc "$2" | docker run --rm -i --network none -v bench-tarxz:/v "$1" tar -x -C /v' sh "$SANDBOXER_TEST_IMAGE" "$state/vol.tar.gz" >>"$state/v_tarxz"
	}
	[ $((run % 2)) = 0 ] || vol_tarxz
	above_plan "$vol" "${v_vars[@]}" -var 'snapshots=["warm","full","inc"]' -var restore=full >>"$state/v_restore"
	[ $((run % 2)) = 1 ] || vol_tarxz
	docker volume rm bench-tarxz >/dev/null
	rm -f "$state/vol.tar.gz"
	tf "$vol" destroy -auto-approve "${v_vars[@]}" -var 'snapshots=["warm","full","inc"]' -var restore=full
	log "run $run: volume full $(tail -n1 "$state/v_full") s, incremental $(tail -n1 "$state/v_inc") s ($(tail -n1 "$state/v_stored") B stored of $(tail -n1 "$state/v_changed") B changed), restore $(tail -n1 "$state/v_restore") s; docker run tar | gzip -1 $(tail -n1 "$state/v_gz") s, gzip -dc | tar -x $(tail -n1 "$state/v_tarxz") s, tar -x (uncompressed) $(tail -n1 "$state/v_tarx") s"
done
rm -f "$state/vol.tar"
for f in v_full v_inc v_restore v_gz v_tarxz v_tarx v_stored v_changed; do printf -v "$f" '%s' "$(median <"$state/$f")"; done
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
tun_vars=(-var "address=127.0.0.1:$PORT" -var "user=$SANDBOXER_TEST_SSH_USER" -var "private_key_file=$SANDBOXER_TEST_SSH_KEY"
	-var "known_hosts_file=$state/known_hosts" -var "root_dir=$root" -var "repo=$trepo" -var "compose_command=$COMPOSE"
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
for f in tn_tun_put tn_tun_alone tn_tun_p90 tn_tun_b2b tn_ssh_put tn_ssh_alone tn_ssh_p90 tn_ssh_b2b; do : >"$state/$f"; done
for run in $(seq 1 "$RUNS"); do
	ssh -N -o BatchMode=yes -o ExitOnForwardFailure=yes -o UserKnownHostsFile="$state/known_hosts" -i "$SANDBOXER_TEST_SSH_KEY" -p "$PORT" \
		-L "127.0.0.1:$lport_source:$source_ip:9000" -L "127.0.0.1:$lport_accept:$accept_ip:9001" "$SANDBOXER_TEST_SSH_USER@127.0.0.1" &
	ssh_pid=$!
	for _ in $(seq 1 100); do
		listening "$lport_source" && listening "$lport_accept" && break
		kill -0 "$ssh_pid" 2>/dev/null || die "ssh -L exited; see $state/sshd.log"
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
	log "run $run: $TUN_MIB MiB sandboxer_tunnel $(tail -n1 "$state/tn_tun_put") s, ssh -L $(tail -n1 "$state/tn_ssh_put") s; one connection alone $(tail -n1 "$state/tn_tun_alone") s, $(tail -n1 "$state/tn_ssh_alone") s (90th percentile $(tail -n1 "$state/tn_tun_p90") s, $(tail -n1 "$state/tn_ssh_p90") s); back to back $(tail -n1 "$state/tn_tun_b2b") s, $(tail -n1 "$state/tn_ssh_b2b") s"
done
for f in tn_tun_put tn_tun_alone tn_tun_p90 tn_tun_b2b tn_ssh_put tn_ssh_alone tn_ssh_p90 tn_ssh_b2b; do printf -v "$f" '%s' "$(median <"$state/$f")"; done
tf "$tun" destroy -auto-approve "${tun_vars[@]}" -var measure_script= -var run=destroy
tun=""
ms() { awk -v s="$1" 'BEGIN {printf "%.2f", s * 1000}'; }
mibps() { awk -v s="$1" -v m="$TUN_MIB" 'BEGIN {printf "%.0f", m / s}'; }
fi

# ---------------------------------------------------------------- report
missed=0
row() { # what, measured, baseline, goal (ratio <=)[, unit]
	local ratio verdict unit="${5:-s}"
	ratio="$(awk -v a="$2" -v b="$3" 'BEGIN {printf "%.2f", a / b}')"
	if awk -v r="$ratio" -v g="$4" 'BEGIN {exit !(r <= g)}'; then verdict=PASS; else verdict=FAIL missed=1; fi
	printf '| %s | %s %s vs %s %s | %sx | <= %sx | %s |\n' "$1" "$2" "$unit" "$3" "$unit" "$ratio" "$4" "$verdict"
}
info() { # what, measured, baseline[, unit]: a ratio shown, with no goal
	local unit="${4:-s}"
	printf '| %s | %s %s vs %s %s | %sx | | |\n' "$1" "$2" "$unit" "$3" "$unit" "$(awk -v a="$2" -v b="$3" 'BEGIN {printf "%.2f", a / b}')"
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
if want apply; then
	row "apply of $N sandboxes vs remote-exec" "$t_prov" "$t_re" 0.7
	row "apply of $N sandboxes vs $N parallel shell mkdir; cp; compose up -d" "$t_prov" "$t_floor" 1.5
	count "SSH handshakes, apply of $N (remote-exec: $h_re)" "$h_apply" 1
	row "apply of $N copies of a stack with a fixed container_name and host port (rendered) vs of $N without" "$t_ports" "$t_prov" 1.1
fi
if want plan; then
	row "plan of $M sandboxes + $M snapshots vs 1 + 1" "$t_planM" "$t_plan1" 2
	count "SSH handshakes, plan of $M + $M" "$h_plan" 1
fi
if want checkpoint; then
	row "incremental snapshot after 1% of files changed vs the full snapshot (apply above plan)" "$t_inc" "$t_full" 0.15
	row "full snapshot (apply above plan) vs tar -c \\| gzip -1 of the workspace" "$t_full" "$t_gz" 0.3
	row "restore into a new sandbox (apply above plan) vs tar -x of the same data" "$t_restore" "$t_tarx" 0.8
	row "store size of the full snapshot vs its tar -c \\| gzip -1 ($CK_FILES files, $CK_MIB MiB, half random)" "$(mib "$s_store")" "$(mib "$s_gz")" 1.0 MiB
fi
if want volume; then
	row "volume snapshot ($VOL_FILES files, $VOL_MIB MiB; apply above plan) vs docker run tar -c \\| gzip -1" "$v_full" "$v_gz" 1.0
	row "restore into a new sandbox with a new volume (apply above plan) vs gzip -dc \\| docker run tar -x of that .tar.gz into a fresh volume" "$v_restore" "$v_tarxz" 1.0
	info "the same restore vs docker run tar -x of an uncompressed tar into a fresh volume (no goal)" "$v_restore" "$v_tarx"
	row "incremental volume snapshot after 1% of files changed vs the full one (apply above plan)" "$v_inc" "$v_full" 0.15
	row "incremental volume snapshot: stored bytes vs bytes changed" "$v_stored" "$v_changed" 1.1 B
fi
if want tunnel; then
	row "tunnel throughput, $TUN_MIB MiB: sandboxer_tunnel ($(mibps "$tn_tun_put") MiB/s) vs ssh -L ($(mibps "$tn_ssh_put") MiB/s), time" "$tn_tun_put" "$tn_ssh_put" 1.11
	row "tunnel connection setup vs ssh -L, connections opened alone (median of $TUN_CONNS)" "$(ms "$tn_tun_alone")" "$(ms "$tn_ssh_alone")" 1.2 ms
	info "the same, 90th percentile (no goal)" "$(ms "$tn_tun_p90")" "$(ms "$tn_ssh_p90")" ms
	info "the same, back to back (no goal; each ssh -N open waits for the delayed ACK of the close before)" "$(ms "$tn_tun_b2b")" "$(ms "$tn_ssh_b2b")" ms
fi
exit "$missed"
