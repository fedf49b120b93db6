#!/usr/bin/env bash
# measure.sh: what the tunnel rows of scripts/bench-apply.sh time, run by
# a local-exec provisioner while two sandboxer_tunnel are open, against
# them and against `ssh -L` forwards of the same two services, in turns,
# so that load on the host weighs on both sides alike:
#
#   TUN_SOURCE, SSH_SOURCE  host:port of each side whose every connection
#                sends BYTES bytes, then ends (all are read; fewer fails)
#   TUN_ACCEPT, SSH_ACCEPT  host:port of each side whose every connection
#                the far end closes at once
#   BYTES        bytes sent on each connection to a *_SOURCE
#   CONNS        connections opened through each side to its *_ACCEPT,
#                each alone (PAUSE seconds after the one before, untimed,
#                the sides in turns), then as many back to back (one side's,
#                then the other's)
#   PAUSE        seconds between two connections opened alone (default 0.2)
#   OUT          file written: a line "tunnel <s> <s> <s> <s>" and a line
#                "ssh <s> <s> <s> <s>": seconds to read BYTES (the mean of
#                two reads, in the order tunnel, ssh, ssh, tunnel); median
#                and 90th percentile seconds of one connection opened alone;
#                median seconds of one back to back
#
# One connection's time is its connect through the forward to the far end's
# close arriving: a forward accepts locally at once, so only the far end's
# answer says the relayed connection was made. A connection opened alone
# finds the SSH connection idle; back to back, each is opened within a
# millisecond of the close before it. `ssh -N` opens no session, and
# without one neither ssh nor sshd turns Nagle's algorithm off on the SSH
# connection: each open then waits for the ACK of that close, a delayed
# ACK (about 40 ms). The provider's connection has run commands (sessions)
# before its tunnels open. Connections are bash's /dev/tcp, timed with
# EPOCHREALTIME: no process is started in a timed step but the byte counter.
set -euo pipefail
export LC_ALL=C

connect() { # $1 = host:port: opens fd 3 to it
	exec 3<>"/dev/tcp/${1%:*}/${1##*:}"
}
quantile() { # $1 = 0.5 (median), 0.9, ...: of the numbers on stdin
	sort -g | awk -v q="$1" '{a[NR] = $1} END {i = int(q * NR + 0.999999); if (i < 1) i = 1; printf "%.6f", a[i]}'
}

read_all() { # $1 = host:port: prints the seconds its BYTES took
	local a b got
	a=$EPOCHREALTIME
	connect "$1"
	got="$(wc -c <&3)"
	b=$EPOCHREALTIME
	exec 3<&-
	if [ "$got" != "$BYTES" ]; then
		echo "measure.sh: read $got bytes from $1, expected $BYTES" >&2
		exit 1
	fi
	awk -v a="$a" -v b="$b" 'BEGIN {printf "%.6f\n", b - a}'
}

one() { # $1 = host:port: prints the seconds of one connection
	local a b
	a=$EPOCHREALTIME
	connect "$1"
	# Nothing is sent: read returns at the far end's close.
	read -r -u 3 _ || true
	b=$EPOCHREALTIME
	exec 3<&-
	awk -v a="$a" -v b="$b" 'BEGIN {printf "%.6f\n", b - a}'
}

t1="$(read_all "$TUN_SOURCE")"
s1="$(read_all "$SSH_SOURCE")"
s2="$(read_all "$SSH_SOURCE")"
t2="$(read_all "$TUN_SOURCE")"

tun_alone=() ssh_alone=()
for _ in $(seq 1 "$CONNS"); do
	sleep "${PAUSE:-0.2}"
	tun_alone+=("$(one "$TUN_ACCEPT")")
	sleep "${PAUSE:-0.2}"
	ssh_alone+=("$(one "$SSH_ACCEPT")")
done
tun_b2b=() ssh_b2b=()
for _ in $(seq 1 "$CONNS"); do tun_b2b+=("$(one "$TUN_ACCEPT")"); done
for _ in $(seq 1 "$CONNS"); do ssh_b2b+=("$(one "$SSH_ACCEPT")"); done

{
	printf 'tunnel %s %s %s %s\n' "$(awk -v a="$t1" -v b="$t2" 'BEGIN {printf "%.6f", (a + b) / 2}')" \
		"$(printf '%s\n' "${tun_alone[@]}" | quantile 0.5)" "$(printf '%s\n' "${tun_alone[@]}" | quantile 0.9)" \
		"$(printf '%s\n' "${tun_b2b[@]}" | quantile 0.5)"
	printf 'ssh %s %s %s %s\n' "$(awk -v a="$s1" -v b="$s2" 'BEGIN {printf "%.6f", (a + b) / 2}')" \
		"$(printf '%s\n' "${ssh_alone[@]}" | quantile 0.5)" "$(printf '%s\n' "${ssh_alone[@]}" | quantile 0.9)" \
		"$(printf '%s\n' "${ssh_b2b[@]}" | quantile 0.5)"
} >"$OUT"
