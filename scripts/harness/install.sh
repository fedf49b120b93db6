#!/usr/bin/env bash
# Installs from Debian the packages the test harness needs, but only those missing:
# docker.io, docker-compose, openssh-server/-client/-sftp-server (sshd runs the distribution's
# sftp-server, as hosts have it), busybox-static, tar, iproute2,
# cron (its crontab command: the reaper's crontab line is tested; the daemon is not started),
# and postgresql-15 with postgresql-client-15 (up.sh builds the sandboxer-postgres:15 image
# from the server's binaries; tests run psql through a tunnel); for the install and release
# tests (scripts/test-install.sh, scripts/test-release.sh): make, git, unzip, and gnupg
# (goreleaser signs the checksums with a throwaway key, gpg verifies the signature);
# for actionlint, which checks the workflows' shell steps with it, shellcheck; and for
# scripts/bench-apply.sh's checkpoint rows, which compare with it, restic; for the fault
# soak (scripts/soak.sh), e2fsprogs (its loop-mounted ext4) and procps (pkill); curl, which
# drives toxiproxy in the network rows of scripts/bench-apply.sh.
# Waits for any running apt/dpkg (dpkg lock) instead of fighting it. Must run as root.
set -euo pipefail

PKGS=(docker.io docker-compose openssh-server openssh-client openssh-sftp-server busybox-static tar iproute2 iptables util-linux cron postgresql-15 postgresql-client-15
	make git unzip gnupg shellcheck restic e2fsprogs procps curl)
LOCK_WAIT="${SANDBOXER_APT_LOCK_WAIT:-1800}" # seconds

die() { echo "install.sh: ERROR: $*" >&2; exit 1; }

is_installed() {
	[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true)" = installed ]
}

missing() {
	local p out=()
	for p in "${PKGS[@]}"; do is_installed "$p" || out+=("$p"); done
	echo "${out[*]}"
}

# Lock files apt and dpkg hold while working.
LOCKS=(/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock /var/cache/apt/archives/lock)

locks_busy() {
	local l ino
	# Another apt/dpkg process running counts as busy even between its lock grabs.
	for l in apt-get apt dpkg aptitude unattended-upgr; do
		pgrep -x "$l" >/dev/null 2>&1 && return 0
	done
	if command -v fuser >/dev/null 2>&1; then
		for l in "${LOCKS[@]}"; do [ -e "$l" ] && fuser "$l" >/dev/null 2>&1 && return 0; done
	fi
	# dpkg/apt use fcntl locks: look the lock files' inodes up in /proc/locks.
	for l in "${LOCKS[@]}"; do
		[ -e "$l" ] || continue
		ino="$(stat -c %i "$l" 2>/dev/null)" || continue
		grep -q ":$ino " /proc/locks 2>/dev/null && return 0
	done
	return 1
}

wait_for_apt() {
	local waited=0 said=0
	while locks_busy; do
		if [ "$said" = 0 ]; then
			echo "install.sh: waiting for another apt/dpkg run to finish (see /tmp/apt.log if present)..." >&2
			said=1
		fi
		[ "$waited" -lt "$LOCK_WAIT" ] || die "apt/dpkg still busy after ${LOCK_WAIT}s"
		sleep 2
		waited=$((waited + 2))
	done
}

[ "$(id -u)" = 0 ] || die "must run as root"
export DEBIAN_FRONTEND=noninteractive

# A background install may be about to provide what we need: wait for it first.
wait_for_apt
todo="$(missing)"
[ -n "$todo" ] || exit 0

log="$(mktemp /tmp/sandboxer-install.XXXXXX.log)"
run_apt() { # retries once if the lock got taken between our check and apt's own attempt
	for _ in 1 2 3; do
		wait_for_apt
		if apt-get -o DPkg::Lock::Timeout="$LOCK_WAIT" "$@" >>"$log" 2>&1; then return 0; fi
		grep -q 'Could not get lock\|is locked by another process' "$log" || return 1
		sleep 5
	done
	return 1
}
echo "install.sh: installing: $todo" >&2
# shellcheck disable=SC2086
run_apt update -q || { tail -n 20 "$log" >&2; die "apt-get update failed (log: $log)"; }
todo="$(missing)"
# shellcheck disable=SC2086
[ -z "$todo" ] || run_apt install -y -q --no-install-recommends $todo ||
	{ tail -n 20 "$log" >&2; die "apt-get install failed (log: $log)"; }
todo="$(missing)"
[ -z "$todo" ] || die "still missing after install: $todo (log: $log)"
rm -f "$log"
