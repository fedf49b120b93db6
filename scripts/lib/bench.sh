# shellcheck shell=bash
# Sourced, not run: what scripts/bench-apply.sh and scripts/bench-scale.sh
# share, on top of scripts/lib/devprovider.sh (sourced here).
#
#   bench_setup                 the harness's env, the provider built from this
#                               tree (devprovider_setup), Terraform's settings;
#                               sets BENCH_STATE, the run's scratch directory
#   bench_sshd NAME PORT SFTP   an sshd of the benchmark's own on 127.0.0.1:PORT,
#                               configured as the harness's (so that its log counts
#                               only the benchmark's handshakes), with SFTP:
#                                 sftp-server  `Subsystem sftp` the distribution's
#                                              external sftp-server, as hosts ship it
#                                 none         no Subsystem line, as hardened hosts
#                               Its host key goes into BENCH_STATE/known_hosts; it
#                               is stopped on exit.
#   bench_handshakes NAME       SSH handshakes that sshd has accepted so far
#   log MSG, die MSG            to stderr, prefixed with the script's name
#   tf DIR ARGS...              terraform -chdir=DIR ARGS, its output in DIR/last.log
#                               (the tail shown on failure); with
#                               SANDBOXER_BENCH_TRACE set to a directory, each
#                               step's provider log at DEBUG goes there
#   timed CMD...                prints the seconds CMD took; fails as it fails
#   median                      the median of the numbers on stdin
#   bench_table TITLE           the table's title and header
#   row, info, count            the table's rows (see each); row and count set
#                               bench_missed=1 when a goal is missed. The sshd
#                               column shows BENCH_SSHD (default sftp-server):
#                               set it before rows measured through another sshd.

# bench_missed and the settings are read by the scripts that source this.
# shellcheck disable=SC2034

# shellcheck source=scripts/lib/devprovider.sh
. "$(dirname "${BASH_SOURCE[0]}")/devprovider.sh"

BENCH_SFTP_SERVER=/usr/lib/openssh/sftp-server
BENCH_SSHD="sftp-server"
BENCH_STATE=""
bench_missed=0

log() { printf '%s: %s\n' "$(basename "$0")" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

bench_setup() {
	local env_file="$HOME/.cache/sandboxer-harness/env"
	[ -f "$env_file" ] || die "no harness: run scripts/harness/install.sh and scripts/harness/up.sh"
	# shellcheck disable=SC1090
	. "$env_file"
	devprovider_setup
	unset TF_LOG TF_LOG_PROVIDER
	export TF_IN_AUTOMATION=1 TF_INPUT=0
	BENCH_STATE="$(devprovider_tmpdir state)"
}

bench_sshd() { # NAME PORT SFTP
	local name="$1" port="$2" sftp="$3" cfg="$BENCH_STATE/sshd-$1.config"
	sed -e "s|^ListenAddress .*|ListenAddress 127.0.0.1:$port|" \
		-e "s|^PidFile .*|PidFile $BENCH_STATE/sshd-$name.pid|" \
		-e '/^Subsystem /d' \
		"$HOME/.cache/sandboxer-harness/sshd_config_2222" >"$cfg"
	case "$sftp" in
	sftp-server)
		[ -x "$BENCH_SFTP_SERVER" ] || die "$BENCH_SFTP_SERVER (openssh-sftp-server) not found; run scripts/harness/install.sh"
		echo "Subsystem sftp $BENCH_SFTP_SERVER" >>"$cfg"
		;;
	none) ;;
	*) die "bench_sshd: unknown sftp configuration '$sftp'" ;;
	esac
	/usr/sbin/sshd -f "$cfg" -E "$BENCH_STATE/sshd-$name.log" || die "sshd on port $port did not start; see $BENCH_STATE/sshd-$name.log"
	devprovider_on_exit "bench_stop_sshd $name"
	printf '[127.0.0.1]:%s %s\n' "$port" "$(cut -d' ' -f1,2 "$SANDBOXER_TEST_HOST_KEY")" >>"$BENCH_STATE/known_hosts"
}
bench_stop_sshd() { # NAME
	local pidf="$BENCH_STATE/sshd-$1.pid"
	[ ! -f "$pidf" ] || kill "$(cat "$pidf")" 2>/dev/null || true
}
bench_handshakes() { grep -c 'Accepted publickey' "$BENCH_STATE/sshd-$1.log" || true; }

tf() {
	local dir="$1" trace=()
	shift
	if [ -n "${SANDBOXER_BENCH_TRACE:-}" ]; then
		# Where the time goes: the provider's per-command log of every step.
		mkdir -p "$SANDBOXER_BENCH_TRACE"
		trace=(TF_LOG_PROVIDER=DEBUG "TF_LOG_PATH=$SANDBOXER_BENCH_TRACE/$(date +%s.%N)-$(basename "$dir")-$1.log")
	fi
	env "${trace[@]}" "$TERRAFORM" -chdir="$dir" "$@" -no-color >"$dir/last.log" 2>&1 || { tail -n 30 "$dir/last.log" >&2; return 1; }
}

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
timed() { # prints the seconds "$@" took; fails as it fails
	local t0
	t0="$(now)"
	"$@"
	awk -v a="$t0" -v b="$(now)" 'BEGIN {printf "%.3f\n", b - a}'
}

bench_table() { # title
	echo
	echo "$1"
	echo
	echo "| what | sshd | measured | ratio | goal | |"
	echo "|---|---|---|---|---|---|"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
row() { # what, measured, baseline, goal (ratio <=)[, unit]
	local r verdict unit="${5:-s}"
	r="$(ratio "$2" "$3")"
	# On the ratio itself, not the rounded one shown: 1.003x misses 1.0x.
	if awk -v a="$2" -v b="$3" -v g="$4" 'BEGIN {exit !(a / b <= g)}'; then verdict=PASS; else verdict=FAIL bench_missed=1; fi
	printf '| %s | %s | %s %s vs %s %s | %sx | <= %sx | %s |\n' "$1" "$BENCH_SSHD" "$2" "$unit" "$3" "$unit" "$r" "$4" "$verdict"
}
info() { # what, measured, baseline[, unit]: a ratio shown, with no goal
	local unit="${4:-s}"
	printf '| %s | %s | %s %s vs %s %s | %sx | | |\n' "$1" "$BENCH_SSHD" "$2" "$unit" "$3" "$unit" "$(ratio "$2" "$3")"
}
count() { # what, measured, goal (<=)
	local verdict
	if [ "$2" -le "$3" ]; then verdict=PASS; else verdict=FAIL bench_missed=1; fi
	printf '| %s | %s | %s | | <= %s | %s |\n' "$1" "$BENCH_SSHD" "$2" "$3" "$verdict"
}
