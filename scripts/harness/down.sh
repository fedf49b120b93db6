#!/usr/bin/env bash
# Stops the sshd instances started by up.sh (found via their pidfiles in the state dir).
# Leaves dockerd, the image, keys and logs in place. Idempotent.
set -euo pipefail

STATE="${SANDBOXER_HARNESS_DIR:-$HOME/.cache/sandboxer-harness}"
[ -d "$STATE" ] || exit 0

# alive PID: exists and is not a zombie (pid 1 in some sandboxes reaps late).
alive() { kill -0 "$1" 2>/dev/null && [ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)" != Z ]; }

shopt -s nullglob
rc=0
for pidf in "$STATE"/sshd-*.pid; do
	pid="$(cat "$pidf" 2>/dev/null || true)"
	if [ -n "$pid" ] && alive "$pid"; then
		# Only stop it if it really is an sshd (pids can be reused).
		if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep 'sshd' >/dev/null; then
			kill "$pid" 2>/dev/null || true
			for _ in $(seq 1 50); do alive "$pid" || break; sleep 0.1; done
			if alive "$pid"; then
				echo "down.sh: ERROR: sshd pid $pid ($pidf) did not exit" >&2
				rc=1
				continue
			fi
		fi
	fi
	rm -f "$pidf"
done
exit "$rc"
