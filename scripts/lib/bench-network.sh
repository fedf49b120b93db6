# shellcheck shell=bash
# Sourced by scripts/bench-apply.sh (it uses that script's settings and
# helpers): the network rows, measured through a latency proxy (toxiproxy)
# in front of the benchmark's sshd with sftp-server, at each round-trip
# time of SANDBOXER_BENCH_RTTS (milliseconds, default "0 10 50"):
#
#  26-28. apply, plan (refresh) and destroy of N sandboxes vs the docker
#        provider's docker_compose (v4.5.0, built from the archive at
#        SANDBOXER_BENCH_PEER, default ../shared/peers beside the
#        repository; its rows are skipped, saying so, where it is absent)
#        with N copies of the same stack                   goal <= 0.7x
#  29. the apply of N at the largest RTT vs N parallel hand-run
#        `DOCKER_HOST=ssh://... docker compose up -d --wait`  goal <= 0.8x
#  30. network cost: the apply of N at the largest RTT minus at RTT 0,
#        in round trips of that RTT                        goal <= 10
#  31. round trips of one sandbox's create, refresh and destroy: its host
#        commands, counted in the provider's DEBUG log (each, in one of
#        the connection's shells, is one round trip)     goal <= 2 each
#        and, without a goal, what a step of 1 sandbox costs at the
#        largest RTT more than at 0, beside the step's own commands, the
#        shells it started and its SSH handshakes
#
# network_measure runs them; network_report prints their rows.

NET_RTTS="${SANDBOXER_BENCH_RTTS:-0 10 50}"
NET_PEER_ARCHIVE="${SANDBOXER_BENCH_PEER:-$REPO_ROOT/../shared/peers/terraform-provider-docker-v4.5.0.tar.gz}"
NET_API_PORT="${SANDBOXER_BENCH_TOXIPROXY_PORT:-8481}"
NET_PORT=$((PORT + 2)) # the proxy's listening port, in front of the sshd with sftp-server
NET_MAX_RTT=0
for _r in $NET_RTTS; do [ "$_r" -le "$NET_MAX_RTT" ] || NET_MAX_RTT="$_r"; done
# Set by network_measure, read by network_cleanup on exit too.
net_peer="" net="" ssh_dir="" hand_file="" net_docker_host=""

# shellcheck source=scripts/lib/toxiproxy.sh
. "$REPO_ROOT/scripts/lib/toxiproxy.sh"

# net_peer_build: the docker provider built once from its archive into the
# tools cache; prints its directory, or nothing (and says why) without it.
net_peer_build() {
	local dir="${SANDBOXER_TOOLS_DIR:-$HOME/.cache/sandboxer-tools}/terraform-provider-docker-4.5.0" src
	if [ -x "$dir/terraform-provider-docker" ]; then printf '%s\n' "$dir" && return 0; fi
	if [ ! -f "$NET_PEER_ARCHIVE" ]; then
		log "the peer's rows are skipped: no archive of the docker provider at $NET_PEER_ARCHIVE (SANDBOXER_BENCH_PEER)"
		return 0
	fi
	log "building the docker provider v4.5.0 from $NET_PEER_ARCHIVE into $dir (once; ~8 min on 2 CPUs) ..."
	src="$(devprovider_tmpdir peer-src)"
	tar -xzf "$NET_PEER_ARCHIVE" -C "$src"
	mkdir -p "$dir"
	(cd "$src" && go build -o "$dir/terraform-provider-docker.tmp" .) >&2 || die "building the docker provider failed"
	mv "$dir/terraform-provider-docker.tmp" "$dir/terraform-provider-docker"
	rm -rf "$src"
	printf '%s\n' "$dir"
}

network_measure() {
	local rtt run peer_dir
	peer_tfrc="" # global: pr runs in network_cleanup, on exit
	log "network rows: apply, plan and destroy of $N sandboxes at RTTs of ${NET_RTTS// /, } ms, $RUNS runs"
	toxiproxy_start "$NET_API_PORT"
	toxiproxy_proxy bench-ssh "127.0.0.1:$NET_PORT" "127.0.0.1:$PORT"
	printf '[127.0.0.1]:%s %s\n' "$NET_PORT" "$(cut -d' ' -f1,2 "$SANDBOXER_TEST_HOST_KEY")" >>"$state/known_hosts"
	net="$(work network provider)"
	net_vars=("${common[@]}" -var "address=127.0.0.1:$NET_PORT")

	# The peer as its users configure it (ssh_opts for the key and the
	# known hosts), and docker compose by hand through DOCKER_HOST=ssh://,
	# whose ssh gets the same through a wrapper first on PATH.
	peer_dir="$(net_peer_build)"
	ssh_dir="$(devprovider_tmpdir ssh-wrapper)"
	cat >"$ssh_dir/ssh" <<-SH
		#!/bin/sh
		exec /usr/bin/ssh -i $SANDBOXER_TEST_SSH_KEY -o UserKnownHostsFile=$state/known_hosts -o BatchMode=yes "\$@"
	SH
	chmod +x "$ssh_dir/ssh"
	hand_file="$repo/docker-compose.yml"
	net_docker_host="ssh://$BENCH_USER@127.0.0.1:$NET_PORT"
	if [ -n "$peer_dir" ]; then
		net_peer="$(work peer peer)"
		peer_tfrc="$state/peer.tfrc"
		sed "s|dev_overrides {|dev_overrides {\n    \"kreuzwerker/docker\" = \"$peer_dir\"|" "$TF_CLI_CONFIG_FILE" >"$peer_tfrc"
		peer_vars=(-var "host=$net_docker_host" -var "compose_file=$hand_file"
			-var "ssh_opts=[\"-i\",\"$SANDBOXER_TEST_SSH_KEY\",\"-o\",\"UserKnownHostsFile=$state/known_hosts\",\"-o\",\"BatchMode=yes\"]")
		pr() { TF_CLI_CONFIG_FILE="$peer_tfrc" tf "$@"; }
	fi
	hand() { # $1 = up or down: N stacks by hand through DOCKER_HOST=ssh://, in parallel
		local i pids=() args=(up -d --wait)
		[ "$1" = up ] || args=(down -t 1)
		for i in $(seq 1 "$N"); do
			PATH="$ssh_dir:$PATH" DOCKER_HOST="$net_docker_host" docker compose -p "bench-hand-$i" -f "$hand_file" "${args[@]}" >/dev/null 2>&1 &
			pids+=($!)
		done
		# Their own pids: the proxy is a background child too.
		wait "${pids[@]}"
	}

	devprovider_on_exit network_cleanup

	for rtt in $NET_RTTS; do
		toxiproxy_rtt bench-ssh "$rtt"
		fresh "n_apply_$rtt" "n_plan_$rtt" "n_destroy_$rtt" "n_papply_$rtt" "n_pplan_$rtt" "n_pdestroy_$rtt" "n_hand_$rtt"
		for run in $(seq 1 "$RUNS"); do
			timed tf "$net" apply -auto-approve "${net_vars[@]}" -var "n=$N" >>"$state/n_apply_$rtt"
			timed tf "$net" plan "${net_vars[@]}" -var "n=$N" >>"$state/n_plan_$rtt"
			timed tf "$net" destroy -auto-approve "${net_vars[@]}" -var "n=$N" >>"$state/n_destroy_$rtt"
			if [ -n "$net_peer" ]; then
				timed pr "$net_peer" apply -auto-approve "${peer_vars[@]}" -var "n=$N" >>"$state/n_papply_$rtt"
				timed pr "$net_peer" plan "${peer_vars[@]}" -var "n=$N" >>"$state/n_pplan_$rtt"
				timed pr "$net_peer" destroy -auto-approve "${peer_vars[@]}" -var "n=$N" >>"$state/n_pdestroy_$rtt"
			fi
			timed hand up >>"$state/n_hand_$rtt"
			hand down
			log "RTT $rtt ms, run $run: apply $(last "n_apply_$rtt") s, plan $(last "n_plan_$rtt") s, destroy $(last "n_destroy_$rtt") s; by hand $(last "n_hand_$rtt") s${net_peer:+; docker_compose apply $(last "n_papply_$rtt") s, plan $(last "n_pplan_$rtt") s, destroy $(last "n_pdestroy_$rtt") s}"
		done
		medians "n_apply_$rtt" "n_plan_$rtt" "n_destroy_$rtt" "n_hand_$rtt"
		if [ -n "$net_peer" ]; then medians "n_papply_$rtt" "n_pplan_$rtt" "n_pdestroy_$rtt"; fi
	done

	# Round trips: the host commands of one sandbox's create, refresh and
	# destroy, counted in the provider's DEBUG log (each, in one of the
	# connection's shells, is one round trip), beside the step's own; and
	# what a step of one sandbox costs at the largest RTT more than at 0.
	local step logf id="" args
	net_trace="$(devprovider_tmpdir network-trace)"
	toxiproxy_rtt bench-ssh 0
	for step in apply plan destroy; do
		args=("${net_vars[@]}" -var "n=1")
		[ "$step" = plan ] || args=(-auto-approve "${args[@]}")
		logf="$net_trace/$step.log"
		TF_LOG_PROVIDER=DEBUG TF_LOG_PATH="$logf" "$TERRAFORM" -chdir="$net" "$step" "${args[@]}" -no-color >"$net/last.log" 2>&1 ||
			{ tail -n 30 "$net/last.log" >&2; die "terraform $step of 1 sandbox failed"; }
		if [ "$step" = apply ]; then
			id="$("$TERRAFORM" -chdir="$net" output -json first | sed -n 's/.*"id":"\([0-9a-f]*\)".*/\1/p')"
		fi
		net_cmds[$step]="$(grep -E 'host (command|file write)' "$logf" | grep -c "sandbox_id=$id" || true)"
		net_step_cmds[$step]="$(grep -E 'host (command|file write)' "$logf" | grep -vc "sandbox_id=$id" || true)"
		net_shells[$step]="$(grep -c 'started a shell' "$logf" || true)"
	done
	for rtt in 0 "$NET_MAX_RTT"; do
		toxiproxy_rtt bench-ssh "$rtt"
		fresh "n_one_apply_$rtt" "n_one_plan_$rtt" "n_one_destroy_$rtt"
		for run in $(seq 1 "$RUNS"); do
			for step in apply plan destroy; do
				args=("${net_vars[@]}" -var "n=1")
				[ "$step" = plan ] || args=(-auto-approve "${args[@]}")
				h0="$(bench_handshakes sftp-server)"
				timed tf "$net" "$step" "${args[@]}" >>"$state/n_one_${step}_$rtt"
				net_handshakes[$step]=$(($(bench_handshakes sftp-server) - h0))
			done
		done
		medians "n_one_apply_$rtt" "n_one_plan_$rtt" "n_one_destroy_$rtt"
	done
	toxiproxy_rtt bench-ssh 0
}
declare -A net_handshakes

# shellcheck disable=SC2317 # run on exit
network_cleanup() { # what a run cut off leaves: every side's stacks
	toxiproxy_rtt bench-ssh 0 || true
	[ -z "${net:-}" ] || tf "$net" destroy -auto-approve "${net_vars[@]}" -var "n=$N" || true
	[ -z "${net_peer:-}" ] || pr "$net_peer" destroy -auto-approve "${peer_vars[@]}" -var "n=$N" || true
	[ -z "${hand_file:-}" ] || hand down || true
}

declare -A net_cmds net_step_cmds net_shells
network_report() {
	local rtt what step
	BENCH_SSHD="sftp-server, through toxiproxy"
	for rtt in $NET_RTTS; do
		if [ -n "$net_peer" ]; then
			row "RTT $rtt ms: apply of $N sandboxes vs docker_compose" "${med[n_apply_$rtt]}" "${med[n_papply_$rtt]}" 0.7
			row "RTT $rtt ms: plan of $N sandboxes vs docker_compose" "${med[n_plan_$rtt]}" "${med[n_pplan_$rtt]}" 0.7
			row "RTT $rtt ms: destroy of $N sandboxes vs docker_compose" "${med[n_destroy_$rtt]}" "${med[n_pdestroy_$rtt]}" 0.7
		else
			info "RTT $rtt ms: apply / plan / destroy of $N sandboxes (no peer: SANDBOXER_BENCH_PEER)" "${med[n_apply_$rtt]}" "${med[n_apply_$rtt]}"
		fi
		info "RTT $rtt ms: apply of $N sandboxes vs $N parallel DOCKER_HOST=ssh:// docker compose up -d --wait (goal at the largest RTT only)" "${med[n_apply_$rtt]}" "${med[n_hand_$rtt]}"
	done
	row "RTT $NET_MAX_RTT ms: apply of $N sandboxes vs $N parallel DOCKER_HOST=ssh:// docker compose up -d --wait" "${med[n_apply_$NET_MAX_RTT]}" "${med[n_hand_$NET_MAX_RTT]}" 0.8
	row "network cost: apply of $N at RTT $NET_MAX_RTT ms minus at RTT 0 vs 10 round trips" \
		"$(awk -v a="${med[n_apply_$NET_MAX_RTT]}" -v b="${med[n_apply_0]}" 'BEGIN {printf "%.3f", a - b}')" \
		"$(awk -v r="$NET_MAX_RTT" 'BEGIN {printf "%.3f", 10 * r / 1000}')" 1.0
	for what in "apply:create" "plan:refresh" "destroy:destroy"; do
		step="${what%%:*}"
		count "host commands (round trips) of one sandbox's ${what#*:}" "${net_cmds[$step]}" 2
		info "a $step of 1 sandbox at RTT $NET_MAX_RTT ms more than at 0 (no goal), in seconds vs 1 round trip: the step's own ${net_step_cmds[$step]} commands, ${net_shells[$step]} shells started, ${net_handshakes[$step]} SSH handshakes, and the sandbox's ${net_cmds[$step]}" \
			"$(awk -v a="${med[n_one_${step}_$NET_MAX_RTT]}" -v b="${med[n_one_${step}_0]}" 'BEGIN {printf "%.3f", a - b}')" \
			"$(awk -v r="$NET_MAX_RTT" 'BEGIN {printf "%.3f", r / 1000}')"
	done
}
