#!/usr/bin/env bash
# A three-node Docker Swarm on this one machine, for acceptance tests:
#
#   swarm.sh up             (idempotent) a bridge sbxsw0 (10.217.0.254/24) in the root
#                           network namespace; namespaces sbxsw1..3 (10.217.0.1..3) on it,
#                           each with a dockerd of its own; a swarm of them (node 1 the
#                           manager, overlay pool 10.218.0.0/16); the harness image on every
#                           node; an sshd in sbxsw1 on 10.217.0.1:22 whose sessions' docker
#                           talks to the manager. Writes STATE/swarm_env (export lines)
#                           and prints its path as the last line of stdout.
#   swarm.sh check          a stack of 3 replicas through that sshd runs on >= 2 nodes, and
#                           is removed again (up runs it once per swarm)
#   swarm.sh overlay-check  two tasks on different nodes ping each other over an overlay
#   swarm.sh node-stop N    stops node N's dockerd (SIGTERM) and returns once it has exited
#   swarm.sh node-start N   starts it again; returns once it answers and (while the manager
#                           runs) every running node is active and Ready in the manager's view
#   swarm.sh down           (idempotent) removes all of it: processes, namespaces, links,
#                           iptables rules, directories
#
# Needs root, after scripts/harness/up.sh (the client key and the image come from it).
# Never touches the machine's main docker engine except to `docker save` the image.
set -euo pipefail

STATE="${SANDBOXER_HARNESS_DIR:-$HOME/.cache/sandboxer-harness}"
IMAGE="sandboxer-busybox:latest"
NONROOT_USER="${SANDBOXER_NONROOT_USER:-sandboxer-ci}"
NODES=(1 2 3)
BR=sbxsw0                   # the bridge (root namespace); namespaces are sbxsw1..3
NET=10.217.0                # /24: node N is $NET.N, the bridge $NET.254
POOL=10.218.0.0/16          # overlay networks (apart from 10.213/16, 10.215/16 and $NET.0/24)
RUN=/run/sbxsw              # sockets, exec roots, pid files: unix socket paths must stay < 108 bytes
IPT_TAG=sandboxer-swarm     # comment on our iptables rules, so down removes exactly those
SMOKE=sbxsmoke              # the check's stack

die() { echo "swarm.sh: ERROR: $*" >&2; exit 1; }
say() { echo "swarm.sh: $*" >&2; }

usage() {
	echo "usage: swarm.sh up|check|overlay-check|node-stop N|node-start N|down" >&2
	exit 2
}

CMD="${1:-}"
case "$CMD" in
up | check | overlay-check | down) [ $# = 1 ] || usage ;;
node-stop | node-start) [ $# = 2 ] && [[ "$2" =~ ^[123]$ ]] || usage ;;
*) usage ;;
esac

[ "$(id -u)" = 0 ] || die "must run as root (network namespaces, dockerd, sshd)"
for c in ip iptables dockerd docker ssh ssh-keygen setsid nohup nsenter unshare hostname flock timeout; do
	command -v "$c" >/dev/null 2>&1 || die "'$c' not found; run scripts/harness/install.sh first"
done
[ -x /usr/sbin/sshd ] || die "/usr/sbin/sshd not found; run scripts/harness/install.sh first"
# The sftp subsystem as distributions ship it (as up.sh's sshd runs it).
SFTP_SERVER=/usr/lib/openssh/sftp-server
[ -x "$SFTP_SERVER" ] || die "$SFTP_SERVER (openssh-sftp-server) not found; run scripts/harness/install.sh first"

mkdir -p "$STATE"
chmod 700 "$STATE"
STATE="$(cd "$STATE" && pwd)"
SW="$STATE/swarm" # data roots, logs, sshd keys and config
CLIENT_KEY="$STATE/client_ed25519"
KNOWN_HOSTS="$STATE/swarm_known_hosts"
HOST_KEY_PUB="$STATE/swarm_host_key.pub"
ENV_FILE="$STATE/swarm_env"
SSHD_LOG="$SW/sshd.log"

# One run at a time: up, down and node-start/stop racing would leave half states.
# (Daemons started below get fd 9 closed, or they would hold the lock for good.)
exec 9>"$STATE/.swarm.lock"
flock 9

sock() { echo "$RUN/$1/docker.sock"; }
dk() { # dk N ARGS...: the docker CLI against node N
	local n="$1"
	shift
	docker -H "unix://$(sock "$n")" "$@"
}
dk_ok() { timeout 10 docker -H "unix://$(sock "$1")" version --format "{{.Server.Version}}" >/dev/null 2>&1; }

# alive PID: exists and is not a zombie (pid 1 in some sandboxes reaps late).
alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null && [ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)" != Z ]; }

# pid_of PIDFILE COMM NETNS: the pid in PIDFILE if it is a live COMM in network namespace
# NETNS (pids are reused; a pid file alone proves nothing).
pid_of() {
	local pid
	pid="$(cat "$1" 2>/dev/null)" || return 1
	alive "$pid" || return 1
	[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ] || return 1
	[ "$(ip netns identify "$pid" 2>/dev/null)" = "$3" ] || return 1
	echo "$pid"
}
dockerd_pid() { pid_of "$RUN/$1/docker.pid" dockerd "sbxsw$1"; }
sshd_pid() { pid_of "$SW/sshd.pid" sshd sbxsw1; }

SSH_OPTS=(-i "$CLIENT_KEY" -o IdentitiesOnly=yes -o BatchMode=yes
	-o UserKnownHostsFile="$KNOWN_HOSTS" -o GlobalKnownHostsFile=/dev/null
	-o StrictHostKeyChecking=yes -o ConnectTimeout=5 -o LogLevel=ERROR)
# swssh USER CMD: CMD through the swarm's sshd (stdin is the caller's).
swssh() { ssh "${SSH_OPTS[@]}" "$1@$NET.1" "$2"; }

# ------------------------------------------------------------------ network
# Rules in the root namespace's FORWARD chain (it always exists; DOCKER-USER only while
# the main engine runs): that engine sets the policy to DROP, and with br_netfilter
# loaded frames bridged between the namespaces pass through FORWARD too.
IPT_RULES=("-i $BR -o $BR")
ipt_add() {
	local r
	for r in "${IPT_RULES[@]}"; do
		# shellcheck disable=SC2086
		iptables -C FORWARD $r -m comment --comment "$IPT_TAG" -j ACCEPT 2>/dev/null ||
			iptables -I FORWARD $r -m comment --comment "$IPT_TAG" -j ACCEPT
	done
}
ipt_del() {
	local r
	for r in "${IPT_RULES[@]}"; do
		# shellcheck disable=SC2086
		while iptables -C FORWARD $r -m comment --comment "$IPT_TAG" -j ACCEPT 2>/dev/null; do
			iptables -D FORWARD $r -m comment --comment "$IPT_TAG" -j ACCEPT
		done
	done
}

net_up() {
	local n ns
	ip link show "$BR" >/dev/null 2>&1 || ip link add "$BR" type bridge
	ip -4 addr show dev "$BR" | grep "inet $NET.254/24 " >/dev/null || ip addr add "$NET.254/24" dev "$BR"
	ip link set "$BR" up
	for n in "${NODES[@]}"; do
		ns="sbxsw$n"
		# A namespace file that no longer names a namespace (/run kept across a reboot)
		# fails to enter: make it again.
		if ! ip netns exec "$ns" true 2>/dev/null; then
			ip netns del "$ns" 2>/dev/null || true
			ip netns add "$ns"
		fi
		if ! ip link show "${ns}h" >/dev/null 2>&1; then
			ip -n "$ns" link del eth0 2>/dev/null || true
			ip link add "${ns}h" type veth peer name eth0 netns "$ns"
		fi
		ip link set "${ns}h" master "$BR" up
		ip -n "$ns" -4 addr show dev eth0 | grep "inet $NET.$n/24 " >/dev/null || ip -n "$ns" addr add "$NET.$n/24" dev eth0
		ip -n "$ns" link set lo up
		ip -n "$ns" link set eth0 up
	done
	ipt_add
}

# ------------------------------------------------------------------ dockerd
start_dockerd() { # N; returns once it answers
	local n="$1" ns="sbxsw$1" dir="$SW/$1" pid group=()
	if dockerd_pid "$n" >/dev/null && dk_ok "$n"; then return 0; fi
	mkdir -p "$dir" "$RUN/$n"
	chmod 755 "$RUN" "$RUN/$n" # the socket's group (docker) must reach it
	echo '{}' >"$dir/daemon.json" # not /etc/docker/daemon.json
	getent group docker >/dev/null && group=(--group docker)
	if ! pid="$(dockerd_pid "$n")"; then
		drop_stale_vxlans "$n"
		# In the network namespace via nsenter, not `ip netns exec`: that one mounts a
		# fresh /sys, without the cgroup mounts dockerd needs. A mount namespace of its
		# own (slave: the root's mounts still show) hides /run/containerd, so that it
		# starts a containerd of its own beside it instead of using a system one, which
		# would not see the overlay mounts it makes in its mount namespace. A UTS
		# namespace too: the node's hostname (what `docker node ls` and `service ps` show)
		# is sbxswN, not the machine's for all three.
		# DOCKER_SERVICE_PREFER_OFFLINE_IMAGE: tasks use the loaded image without trying a
		# registry first (nothing can be pulled).
		# --iptables stays on: libnetwork's overlay/ingress set-up wants it; its rules
		# stay in the namespace. cgroupfs driver: --cgroup-parent is then a plain path.
		# setsid: its own session, so it outlives the shell (or CI job) that started it.
		setsid nohup env DOCKER_SERVICE_PREFER_OFFLINE_IMAGE=1 \
			nsenter --net="/run/netns/$ns" unshare --mount --propagation slave --uts sh -c '
			hostname "$0" || exit 1
			if [ -d /run/containerd ]; then mount -t tmpfs -o mode=711 sbxsw-containerd /run/containerd || exit 1; fi
			exec "$@"' "$ns" dockerd \
			--data-root "$dir/data" \
			--exec-root "$RUN/$n/exec" \
			--pidfile "$RUN/$n/docker.pid" \
			-H "unix://$(sock "$n")" "${group[@]}" \
			--config-file "$dir/daemon.json" \
			--containerd-namespace "$ns" --containerd-plugins-namespace "$ns-plugins" \
			--exec-opt native.cgroupdriver=cgroupfs --cgroup-parent "/$ns" \
			--shutdown-timeout 5 \
			>>"$dir/dockerd.log" 2>&1 </dev/null 9>&- &
		pid=$!
	fi
	local deadline=$((SECONDS + 60))
	while [ "$SECONDS" -lt "$deadline" ]; do
		dk_ok "$n" && return 0
		alive "$pid" || break
		sleep 0.2 # polling a socket that does not answer yet
	done
	echo "swarm.sh: ERROR: dockerd of node $n did not answer within 60s; last lines of $dir/dockerd.log:" >&2
	tail -n 20 "$dir/dockerd.log" >&2
	exit 1
}

# drop_stale_vxlans N: removes overlay vxlan interfaces (vx-*) left in node N's namespace.
# dockerd creates one there and moves it into the overlay network's own namespace; a
# daemon stopped in between leaves it behind, and it outlives the daemon (the namespace
# is the node's). Its VNI is then taken: every later task of an overlay network that gets
# that VNI fails on that node ("error creating vxlan interface: file exists") and the
# stack never becomes ready. Called only while the node has no dockerd, so none is a
# live daemon's.
drop_stale_vxlans() {
	local ns="sbxsw$1" link
	for link in $(ip netns exec "$ns" ip -o link show type vxlan 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
		case "$link" in vx-*)
			say "node $1: removing vxlan interface $link, left by an earlier dockerd"
			ip netns exec "$ns" ip link del "$link" || true
			;;
		esac
	done
}

# stop_dockerd N [kill]: SIGTERM (it stops its containers and its containerd) and waits
# for the exit; one still there after 60s is an error, or with "kill" is killed (down
# removes what it leaves).
stop_dockerd() {
	local n="$1" pid deadline
	pid="$(dockerd_pid "$n")" || return 0
	kill -TERM "$pid" 2>/dev/null || true
	deadline=$((SECONDS + 60))
	while alive "$pid" && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.1; done
	alive "$pid" || return 0
	[ "${2:-}" = kill ] || die "dockerd of node $n (pid $pid) did not exit within 60s"
	say "dockerd of node $n (pid $pid) did not exit within 60s; killing it"
	kill -KILL "$pid" 2>/dev/null || true
	for _ in $(seq 1 50); do alive "$pid" || return 0; sleep 0.1; done
	die "dockerd of node $n (pid $pid) survived SIGKILL"
}

# ------------------------------------------------------------------ swarm
node_state() { dk "$1" info --format '{{.Swarm.LocalNodeState}}' 2>/dev/null; }
node_id() { dk "$1" info --format '{{.Swarm.NodeID}}' 2>/dev/null; }

# wait_ready [SECS]: every node whose dockerd runs is active in the swarm by its own
# account (a restarted one is "pending" until it has reached the manager again, which
# may not have noticed it was gone), and the manager lists it as Ready.
wait_ready() {
	local deadline=$((SECONDS + ${1:-60})) n ok
	while :; do
		ok=1
		for n in "${NODES[@]}"; do
			dockerd_pid "$n" >/dev/null || continue
			if [ "$(node_state "$n")" != active ] ||
				[ "$(dk 1 node inspect --format '{{.Status.State}}' "$(node_id "$n")" 2>/dev/null)" != ready ]; then
				ok=0
				break
			fi
		done
		[ "$ok" = 1 ] && return 0
		[ "$SECONDS" -lt "$deadline" ] || {
			dk 1 node ls >&2 || true
			die "node $n is not active and Ready in the swarm after ${1:-60}s"
		}
		sleep 0.5 # polling the nodes' and the manager's view
	done
}

swarm_up() {
	local st token n ids id
	st="$(node_state 1)"
	case "$st" in
	active) ;;
	inactive)
		say "swarm init on node 1"
		dk 1 swarm init --advertise-addr "$NET.1" --listen-addr "$NET.1:2377" \
			--default-addr-pool "$POOL" --default-addr-pool-mask-length 24 >/dev/null
		;;
	*) die "node 1's swarm state is '$st'; run swarm.sh down, then up" ;;
	esac
	[ "$(dk 1 info --format '{{.Swarm.ControlAvailable}}')" = true ] || die "node 1 is not a swarm manager; run swarm.sh down, then up"
	ids="$(dk 1 node ls -q)"
	token=""
	for n in "${NODES[@]:1}"; do
		st="$(node_state "$n")"
		if [ "$st" != inactive ]; then
			# Joined, but to this manager's swarm? (it may have been made again)
			id="$(node_id "$n")"
			if [ "$st" = active ] && [ -n "$id" ] && [[ $'\n'"$ids"$'\n' == *$'\n'"$id"$'\n'* ]]; then continue; fi
			say "node $n is in another swarm ($st); leaving it"
			dk "$n" swarm leave --force >/dev/null
		fi
		[ -n "$token" ] || token="$(dk 1 swarm join-token -q worker)"
		say "node $n joins the swarm"
		dk "$n" swarm join --token "$token" --advertise-addr "$NET.$n" --listen-addr "$NET.$n:2377" "$NET.1:2377" >/dev/null
	done
	# Entries of nodes that are none of ours any more (a node's data made again).
	ids=" $(for n in "${NODES[@]}"; do node_id "$n"; done | tr '\n' ' ')"
	dk 1 node ls --format '{{.ID}} {{.Status}}' | while read -r id status; do
		if [ "$status" = Down ] && [[ "$ids" != *" $id "* ]]; then dk 1 node rm --force "$id" >/dev/null; fi
	done
	wait_ready 60
}

load_image() {
	local n
	docker image inspect "$IMAGE" >/dev/null 2>&1 || die "the main engine has no $IMAGE; run scripts/harness/up.sh first"
	for n in "${NODES[@]}"; do
		dk "$n" image inspect "$IMAGE" >/dev/null 2>&1 && continue
		docker save "$IMAGE" | dk "$n" load -q >/dev/null || die "loading $IMAGE into node $n failed"
	done
}

# ------------------------------------------------------------------ sshd
start_sshd() {
	local hk="$SW/ssh_host_ed25519_key" cfg="$SW/sshd_config" changed=0 pid
	[ -s "$CLIENT_KEY" ] && [ -s "$STATE/authorized_keys" ] || die "no client key in $STATE; run scripts/harness/up.sh first"
	mkdir -p /run/sshd
	chmod 755 /run/sshd
	if [ ! -s "$hk" ] || [ ! -s "$hk.pub" ]; then
		changed=1
		rm -f "$hk" "$hk.pub"
		ssh-keygen -q -t ed25519 -N '' -C sandboxer-harness-swarm -f "$hk" >/dev/null
	fi
	chmod 600 "$hk"
	# SetEnv: every session's docker (any user) talks to the manager; it overrides what
	# a client sends.
	cat >"$cfg.new" <<-EOF
	# Generated by scripts/harness/swarm.sh
	ListenAddress $NET.1:22
	HostKey $hk
	PidFile $SW/sshd.pid
	AuthorizedKeysFile $STATE/authorized_keys .ssh/authorized_keys
	PermitRootLogin prohibit-password
	PubkeyAuthentication yes
	PasswordAuthentication no
	KbdInteractiveAuthentication no
	UsePAM no
	StrictModes no
	SetEnv DOCKER_HOST=unix://$(sock 1)
	LogLevel INFO
	Subsystem sftp $SFTP_SERVER
	EOF
	/usr/sbin/sshd -t -f "$cfg.new" || die "invalid sshd config $cfg.new"
	cmp -s "$cfg.new" "$cfg" || changed=1
	mv -f "$cfg.new" "$cfg"
	if pid="$(sshd_pid)"; then
		[ "$changed" = 0 ] && return 0
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 1 50); do alive "$pid" || break; sleep 0.1; done
	fi
	rm -f "$SW/sshd.pid"
	# sshd daemonizes itself (own session).
	ip netns exec sbxsw1 /usr/sbin/sshd -f "$cfg" -E "$SSHD_LOG" 9>&- || die "sshd in sbxsw1 failed to start; see $SSHD_LOG"
	for _ in $(seq 1 50); do sshd_pid >/dev/null && return 0; sleep 0.1; done
	echo "swarm.sh: ERROR: sshd in sbxsw1 did not write $SW/sshd.pid; last lines of $SSHD_LOG:" >&2
	tail -n 20 "$SSHD_LOG" >&2
	exit 1
}

check_ssh() {
	local out ready ok=0
	echo "$NET.1 $(cut -d' ' -f1-2 "$SW/ssh_host_ed25519_key.pub")" >"$KNOWN_HOSTS.new"
	mv -f "$KNOWN_HOSTS.new" "$KNOWN_HOSTS"
	cut -d' ' -f1-2 "$SW/ssh_host_ed25519_key.pub" >"$HOST_KEY_PUB.new"
	mv -f "$HOST_KEY_PUB.new" "$HOST_KEY_PUB"
	for _ in $(seq 1 20); do # sshd may take a moment to listen after writing its pid file
		if out="$(swssh root 'docker node ls --format "{{.Status}}"' </dev/null 2>&1)"; then ok=1; break; fi
		sleep 0.25
	done
	[ "$ok" = 1 ] || { tail -n 10 "$SSHD_LOG" >&2; die "ssh root@$NET.1 docker node ls failed: $out"; }
	ready="$(echo "$out" | grep -cx Ready || true)"
	[ "$ready" = 3 ] || die "ssh root@$NET.1 docker node ls shows $ready Ready nodes, expected 3: $out"
	if id "$NONROOT_USER" >/dev/null 2>&1; then
		out="$(swssh "$NONROOT_USER" 'id -u; docker node ls -q | wc -l' </dev/null 2>&1)" ||
			die "ssh $NONROOT_USER@$NET.1 docker node ls failed: $out"
		[ "$(echo "$out" | sed -n 1p)" != 0 ] || die "$NONROOT_USER logs in as uid 0"
		[ "$(echo "$out" | tail -n1)" = 3 ] || die "ssh $NONROOT_USER@$NET.1 docker node ls: $out"
	fi
}

# ------------------------------------------------------------------ checks
# stack_gone NAME: waits until the stack's services, networks and containers (on every node) are gone.
stack_gone() {
	local name="$1" f="label=com.docker.stack.namespace=$1" deadline=$((SECONDS + 60)) n left
	while :; do
		left="$(dk 1 service ls -q --filter "$f")$(dk 1 network ls -q --filter "$f")"
		for n in "${NODES[@]}"; do left+="$(dk "$n" ps -aq --filter "$f" 2>/dev/null)"; done
		[ -z "$left" ] && return 0
		[ "$SECONDS" -lt "$deadline" ] || die "stack $name still not gone after 60s"
		sleep 0.5 # polling the engines
	done
}

# wait_tasks SERVICE COUNT: waits until COUNT of its tasks run, on as many nodes; prints "node ip?" lines.
wait_tasks() {
	local svc="$1" count="$2" deadline=$((SECONDS + 90)) out
	while :; do
		out="$(swssh root "docker service ps --filter desired-state=running --format '{{.Node}} {{.CurrentState}}' $svc" </dev/null 2>&1)" || true
		[ "$(echo "$out" | grep ' Running' | cut -d' ' -f1 | sort -u | wc -l)" -ge "$count" ] && return 0
		[ "$SECONDS" -lt "$deadline" ] || {
			swssh root "docker service ps --no-trunc $svc" </dev/null >&2 || true
			return 1
		}
		sleep 0.5 # polling the manager
	done
}

smoke() { # a stack deployed through the swarm's sshd spreads over the nodes and goes away
	local rc=0
	swssh root "docker stack rm $SMOKE" </dev/null >/dev/null 2>&1 || true
	stack_gone "$SMOKE"
	swssh root "docker stack deploy --detach=true --resolve-image never -c - $SMOKE" >/dev/null <<-EOF || die "docker stack deploy through ssh failed"
	version: "3.8"
	services:
	  spin:
	    image: $IMAGE
	    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
	    deploy:
	      replicas: 3
	      placement:
	        max_replicas_per_node: 1
	EOF
	wait_tasks "${SMOKE}_spin" 2 || rc=1
	swssh root "docker stack rm $SMOKE" </dev/null >/dev/null
	stack_gone "$SMOKE"
	[ "$rc" = 0 ] || die "stack $SMOKE: tasks did not run on 2 nodes within 90s"
}

overlay_check() { # two tasks on different nodes ping each other over an overlay network
	local st=sbxovl rc=0 n cid ip ips=() cids=() nodes=()
	swssh root "docker stack rm $st" </dev/null >/dev/null 2>&1 || true
	stack_gone "$st"
	swssh root "docker stack deploy --detach=true --resolve-image never -c - $st" >/dev/null <<-EOF || die "docker stack deploy through ssh failed"
	version: "3.8"
	services:
	  p:
	    image: $IMAGE
	    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
	    networks: [ovl]
	    deploy:
	      replicas: 2
	      placement:
	        max_replicas_per_node: 1
	networks:
	  ovl:
	    driver: overlay
	EOF
	if wait_tasks "${st}_p" 2; then
		for n in "${NODES[@]}"; do
			cid="$(dk "$n" ps -q --filter "label=com.docker.swarm.service.name=${st}_p" | sed -n 1p)"
			[ -n "$cid" ] || continue
			ip="$(dk "$n" inspect --format "{{(index .NetworkSettings.Networks \"${st}_ovl\").IPAddress}}" "$cid")"
			nodes+=("$n") cids+=("$cid") ips+=("$ip")
		done
		if [ "${#cids[@]}" -ge 2 ]; then
			say "overlay: node ${nodes[0]} ${ips[0]} <-> node ${nodes[1]} ${ips[1]}"
			dk "${nodes[0]}" exec "${cids[0]}" ping -c 3 -W 2 "${ips[1]}" >&2 || rc=1
			dk "${nodes[1]}" exec "${cids[1]}" ping -c 3 -W 2 "${ips[0]}" >&2 || rc=1
			# Service discovery over the same network (embedded DNS, task addresses).
			dk "${nodes[0]}" exec "${cids[0]}" nslookup "tasks.${st}_p" >&2 || rc=1
		else
			rc=1
		fi
	else
		rc=1
	fi
	swssh root "docker stack rm $st" </dev/null >/dev/null
	stack_gone "$st"
	[ "$rc" = 0 ] || die "overlay traffic between nodes failed"
	say "overlay traffic crosses the nodes"
}

write_env() {
	local hosts="" n
	for n in "${NODES[@]}"; do hosts+="${hosts:+ }unix://$(sock "$n")"; done
	{
		printf 'export SANDBOXER_TEST_SWARM_SSH_ADDR=%q\n' "$NET.1:22"
		printf 'export SANDBOXER_TEST_SWARM_KNOWN_HOSTS=%q\n' "$KNOWN_HOSTS"
		printf 'export SANDBOXER_TEST_SWARM_HOST_KEY=%q\n' "$HOST_KEY_PUB"
		printf 'export SANDBOXER_TEST_SWARM_NODE_HOSTS="%s"\n' "$hosts" # fixed paths, nothing to quote
		printf 'export SANDBOXER_TEST_SWARM_SSHD_LOG=%q\n' "$SSHD_LOG"
	} >"$ENV_FILE.new"
	mv -f "$ENV_FILE.new" "$ENV_FILE"
}

# ------------------------------------------------------------------ down
# kill_rest NS: what dockerd left in its namespace (its containerd, shims) and in its
# cgroups (task processes, which live in network namespaces of their own); then the
# cgroup directories. Only reached after dockerd has exited.
kill_rest() {
	local ns="$1" pids d
	if ip netns exec "$ns" true 2>/dev/null; then
		pids="$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')"
		# shellcheck disable=SC2086
		[ -z "${pids// /}" ] || kill -KILL $pids 2>/dev/null || true
	fi
	for d in /sys/fs/cgroup/"$ns" /sys/fs/cgroup/*/"$ns"; do
		[ -d "$d" ] || continue
		find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
		for _ in $(seq 1 50); do
			find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
			[ -d "$d" ] || break
			sleep 0.1 # killed processes leave their cgroups asynchronously
		done
		if [ -d "$d" ]; then say "could not remove cgroup $d"; fi
	done
	return 0
}

down() {
	local n pid
	if pid="$(sshd_pid)"; then
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 1 50); do alive "$pid" || break; sleep 0.1; done
		alive "$pid" && die "sshd (pid $pid) did not exit"
	fi
	for n in "${NODES[@]}"; do stop_dockerd "$n" kill; done
	for n in "${NODES[@]}"; do
		kill_rest "sbxsw$n"
		ip netns del "sbxsw$n" 2>/dev/null || true # takes the namespace's veth end, and so the pair, with it
		ip link del "sbxsw${n}h" 2>/dev/null || true
	done
	ip link del "$BR" 2>/dev/null || true
	ipt_del
	# The dockerds' mounts lived in their own mount namespaces, gone with them; still,
	# never cross into a mount here.
	[ ! -d "$SW" ] || rm -rf --one-file-system "$SW"
	[ ! -d "$RUN" ] || rm -rf --one-file-system "$RUN"
	rm -f "$ENV_FILE" "$KNOWN_HOSTS" "$HOST_KEY_PUB"
}

# ------------------------------------------------------------------ main
case "$CMD" in
up)
	mkdir -p "$SW"
	net_up
	for n in "${NODES[@]}"; do
		# A running node with a stale vxlan interface (drop_stale_vxlans) is restarted
		# without it: its daemon's own interfaces are never in the node's namespace.
		if dockerd_pid "$n" >/dev/null && ip netns exec "sbxsw$n" ip -o link show type vxlan 2>/dev/null | grep ': vx-' >/dev/null; then
			stop_dockerd "$n" kill
		fi
		start_dockerd "$n"
	done
	swarm_up
	load_image
	start_sshd
	check_ssh
	# The stack smoke check once per swarm (keyed by its cluster id): warm runs stay fast.
	cluster="$(dk 1 info --format '{{.Swarm.Cluster.ID}}')"
	if [ "$(cat "$SW/smoke-ok" 2>/dev/null)" != "$cluster" ]; then
		smoke
		echo "$cluster" >"$SW/smoke-ok"
	fi
	write_env
	echo "$ENV_FILE"
	;;
check)
	[ -s "$KNOWN_HOSTS" ] && sshd_pid >/dev/null || die "the swarm is not up; run swarm.sh up"
	smoke
	say "stack check passed"
	;;
overlay-check)
	[ -s "$KNOWN_HOSTS" ] && sshd_pid >/dev/null || die "the swarm is not up; run swarm.sh up"
	overlay_check
	;;
node-stop)
	stop_dockerd "$2"
	;;
node-start)
	[ -d "$SW/$2/data" ] || die "node $2 has never been up; run swarm.sh up"
	start_dockerd "$2"
	# With the manager up, wait until it sees every running node Ready again.
	if dockerd_pid 1 >/dev/null; then
		deadline=$((SECONDS + 60))
		until dk 1 node ls >/dev/null 2>&1; do
			[ "$SECONDS" -lt "$deadline" ] || die "the manager does not answer node ls after 60s"
			sleep 0.5 # polling the manager while it takes up its role again
		done
		wait_ready 90
	fi
	;;
down)
	down
	;;
esac
