#!/usr/bin/env bash
# Removes what test runs cut off part-way (a killed CI job, a stopped
# machine) left in the docker engine: the containers, networks and volumes
# of sandboxes (compose projects sbx-*) whose working directory is a Go
# test's temporary directory or a script's (scripts/lib/devprovider.sh:
# the soak, the benchmarks), and those directories; a soak's root file
# system still mounted is unmounted. The acceptance tests'
# "destroy left nothing" checks would otherwise count them. Run it only when
# no test is running (scripts/test-all.sh runs it before the tests).
set -euo pipefail

tmp="${TMPDIR:-/tmp}"
docker ps -a --filter label=com.docker.compose.project \
	--format '{{.Label "com.docker.compose.project"}} {{.Label "com.docker.compose.project.working_dir"}}' |
	sort -u | while read -r project dir; do
	case "$project $dir" in
	"sbx-"*" $tmp/Test"* | "sbx-"*" $tmp/sandboxer."*) ;;
	*) continue ;;
	esac
	echo "sweep.sh: removing $project, left by an interrupted test run in $dir" >&2
	f="label=com.docker.compose.project=$project"
	docker ps -aq --filter "$f" | xargs -r docker rm -f -v >/dev/null
	docker network ls -q --filter "$f" | xargs -r docker network rm >/dev/null
	docker volume ls -q --filter "$f" | xargs -r docker volume rm -f >/dev/null
	# The test's own temporary directory (/tmp/TestName123/), which its
	# killed process could not remove.
	testdir="${dir%%/[0-9][0-9][0-9]/*}"
	case "$testdir" in "$tmp/Test"*/*) ;; "$tmp/Test"*) rm -rf -- "$testdir" ;; esac
done
# A soak cut off part-way (scripts/soak.sh) leaves its loop-mounted root.
{ grep -o " $tmp/sandboxer\.[^ ]*/soak/root " /proc/mounts 2>/dev/null || true; } | while read -r mnt; do
	echo "sweep.sh: unmounting $mnt, left by an interrupted soak" >&2
	umount -l "$mnt" || true
	rm -rf -- "${mnt%/soak/root}"
done
# ... and its fault proxy and sshd, which hold their ports.
pkill -f "toxiproxy-2.5.0/server -host 127.0.0.1 -port 8479" 2>/dev/null || true
# A benchmark's latency proxy (scripts/lib/bench-network.sh) likewise.
pkill -f "toxiproxy-2.5.0/server -host 127.0.0.1 -port 8481" 2>/dev/null || true
pkill -f "$tmp/sandboxer\\.[^ ]*/soak/sshd_config" 2>/dev/null || true
