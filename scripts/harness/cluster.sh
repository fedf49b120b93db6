#!/usr/bin/env bash
# A real one-node Kubernetes cluster (v1.34.4) on this machine, for tests of a
# Kubernetes backend. No image registry is reachable, so everything is built or
# made here:
#
#   cluster.sh build   builds kube-apiserver, -controller-manager, -scheduler, kubelet,
#                      kube-proxy and kubectl v1.34.4 and etcd v3.6.4 from the Go module
#                      proxy (through the wrapper module scripts/harness/cluster/), and two
#                      helpers (the pause binary, cri-clean), once, into
#                      $SANDBOXER_TOOLS_DIR/kubernetes-1.34.4 (and CoreDNS and kube-router,
#                      each from its own module graph); installs the Debian packages it
#                      runs on (containerd 1.6, runc, containernetworking-plugins, ipset,
#                      ...) when missing
#   cluster.sh up      (idempotent; runs build first) starts the cluster and waits until
#                      the node is Ready and `default` has its service account
#   cluster.sh env     prints KEY=VALUE lines for tests (see below)
#   cluster.sh status  exits 0 when the API server answers and the node is Ready
#   cluster.sh down    (idempotent) stops all of it; keeps the build cache, the cluster's
#                      state (etcd, certificates, volumes) and containerd's images, so the
#                      next up is quick and finds the objects tests left
#
# Layout. The node lives in a network namespace of its own, sbxk8s, joined to the
# host by a veth pair: sbxk8s0 (10.219.0.1/24) on the host, eth0 (10.219.0.2/24,
# the node address) in the namespace. Every daemon (etcd, the control plane,
# containerd, kubelet, kube-proxy, kube-router) runs in it, so their iptables rules,
# the pod bridge cni0 (pods 10.244.0.0/24) and the sysctls the node needs stay
# out of the host's network stack (where dockerd and other tests live), and the
# API server (https://10.219.0.2:6443) and NodePorts (10.219.0.2:30000-32767) are
# reached from the host the way a client outside a real cluster reaches them.
# Services get 10.96.0.0/16. Cluster DNS is CoreDNS v1.15.0 (built from the
# module proxy, its image made here like the pause image), as Deployment
# coredns and Service kube-dns (10.96.0.10) in kube-system: a Service's name
# resolves in pods as on any conformant cluster. It answers only for the
# cluster's names (no forwarding: this machine reaches no other DNS).
#
# NetworkPolicy: the bridge CNI enforces none, so kube-router v2.1.0 runs beside
# kube-proxy as the NetworkPolicy enforcer only (--run-firewall, no router, no
# service proxy), in the node's namespace like the other daemons: iptables
# chains KUBE-ROUTER-*, KUBE-NWPLCY-*, KUBE-POD-FW-* and ipsets (the ipset
# command; the kernel's ip_set) there. A connection a policy refuses is
# rejected (ICMP port unreachable: "connection refused" at once), not dropped.
# Traffic from the node itself (the kubelet's probes) is always let through;
# NodePort traffic from the host comes from the host's address 10.219.0.1, so
# it reaches a pod only when a policy admits all sources (or that address).
# The module proxy here serves v2.1.0 only of kube-router/v2 (later versions:
# 403), so that is the version.
#
# State: $SANDBOXER_HARNESS_DIR/cluster (certificates, kubeconfigs, configs,
# etcd's data, the volumes, logs, pid files); /run/sandboxer-k8s (containerd's
# socket and state, runc's state, IP allocations); /var/lib/sandboxer-k8s
# (containerd's images and snapshots, the kubelet's root dir, pod logs). A
# containerd of its own (the CRI plugin, runc, cgroupfs) serves the kubelet; the
# machine's dockerd and containerd are never touched, only read from by
# `docker save` for the images below.
#
# Images: the pause image sandboxer.local/pause:1 (the pause helper, static),
# sandboxer.local/coredns:1.15.0 (the CoreDNS binary alone), and
# the harness's docker images sandboxer-busybox:latest and sandboxer-postgres:15
# (made by scripts/harness/up.sh; required) and sandboxer-volume-helper:1 (made
# by the agent; when docker has it), imported into containerd on each up when
# docker's copy changed. Pods must name them as such, with imagePullPolicy
# IfNotPresent or Never (the kubelet's image GC is off so they stay).
#
# Storage: the default StorageClass sandboxer-local provisions each claim a
# hostPath PersistentVolume (kube-controller-manager's own hostPath
# provisioner, --enable-hostpath-provisioner, for one-node test clusters: a
# directory /tmp/hostpath_pv/<uid>, mode 0750, owned by root, so only root in a
# pod writes to it) with reclaimPolicy Delete: when the claim goes (its
# namespace is deleted), the PV and its directory go too. So "nothing left
# behind" is checked as on a cloud's cluster: no PV names a claim of the
# deleted namespace. (Earlier versions made static PVs, recycled by a pod;
# two recycled at once race in the controller, leaving one Failed.)
#
# env prints: SANDBOXER_TEST_KUBECONFIG (admin, system:masters, certificates
# embedded), SANDBOXER_TEST_NODE_ADDRESS, SANDBOXER_TEST_NODE_NAME,
# SANDBOXER_TEST_STORAGE_CLASS, SANDBOXER_TEST_KUBECTL (v1.34.4).
#
# Needs root and, for its images, scripts/harness/up.sh run before.
# scripts/harness/cluster/check.sh is a smoke test of a cluster that is up.
set -euo pipefail

K8S_VERSION=1.34.4
HERE="$(cd "$(dirname "$0")" && pwd)"
MODDIR="$HERE/cluster" # the wrapper Go module
TOOLS_DIR="${SANDBOXER_TOOLS_DIR:-$HOME/.cache/sandboxer-tools}"
BIN="$TOOLS_DIR/kubernetes-$K8S_VERSION"
STATE="${SANDBOXER_HARNESS_DIR:-$HOME/.cache/sandboxer-harness}"
CL="$STATE/cluster"
RUN=/run/sandboxer-k8s    # sockets and runtime state (unix socket paths must stay < 108 bytes)
VAR=/var/lib/sandboxer-k8s # containerd's root, the kubelet's root dir, pod logs
NETNS=sbxk8s
NETNS_PATH="/run/netns/$NETNS"
VETH_HOST=sbxk8s0
HOST_IP=10.219.0.1
NODE_IP=10.219.0.2 # the node address: API server, kubelet, NodePorts
NODE_NAME=sandboxer-k8s
POD_CIDR=10.244.0.0/24
SERVICE_CIDR=10.96.0.0/16
KUBERNETES_SVC_IP=10.96.0.1
CLUSTER_DNS=10.96.0.10
STORAGE_CLASS=sandboxer-local
PAUSE_IMAGE=sandboxer.local/pause:1
COREDNS_VERSION=1.15.0
COREDNS_IMAGE=sandboxer.local/coredns:$COREDNS_VERSION
IMAGES=(sandboxer-busybox:latest sandboxer-postgres:15)
# The agent makes this one (internal/agent/volumes.go) the first time it needs
# it: imported when docker has it.
OPTIONAL_IMAGES=(sandboxer-volume-helper:1)
CNI_BIN=/usr/lib/cni
# etcd: v3.6.4, what k8s.io/kubernetes v1.34.4 requires and is tested with, built
# from the same module graph. Not Debian's etcd-server 3.4.23: kube-apiserver 1.34
# runs on it but its watch cache never catches up ("Error getting keys"
# err="Timeout: Too large resource version: 483, current: 1", over and over) and
# it then hung on SIGTERM for more than 30s.
ETCD_VERSION=3.6.4
KUBE_ROUTER_VERSION=2.1.0
KUBE_ROUTER_HEALTH_PORT=20244 # in the node's namespace
SOCK="$RUN/containerd/containerd.sock"
# Debian packages: the runtime, CNI plugins, and the commands used here.
APT_PKGS=(containerd runc containernetworking-plugins iptables ipset iproute2 util-linux procps openssl curl docker.io)

log() { echo "cluster.sh: $*" >&2; }
die() { echo "cluster.sh: ERROR: $*" >&2; exit 1; }

usage() {
	echo "usage: cluster.sh build|up|down|env|status" >&2
	exit 2
}
CMD="${1:-}"
[ $# = 1 ] || usage
case "$CMD" in build | up | down | env | status) ;; *) usage ;; esac

# Absolute paths: env prints them for tests that run elsewhere.
[ ! -d "$STATE" ] || STATE="$(cd "$STATE" && pwd)"
case "$STATE" in /*) ;; *) STATE="$PWD/$STATE" ;; esac
CL="$STATE/cluster"
PKI="$CL/pki"
CONF="$CL/conf"
LOGS="$CL/logs"
PIDS="$CL/run"
ADMIN_KUBECONFIG="$CL/kubeconfig"
KUBECTL="$BIN/kubectl"

kc() { "$KUBECTL" --kubeconfig "$ADMIN_KUBECONFIG" "$@"; }

# ------------------------------------------------------------------ env, status
# These only read; they need no root and take no lock.
node_ready() {
	[ -s "$ADMIN_KUBECONFIG" ] && [ -x "$KUBECTL" ] || return 1
	kc --request-timeout=5s get --raw /readyz >/dev/null 2>&1 || return 1
	[ "$(kc --request-timeout=5s get node "$NODE_NAME" \
		-o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}
print_env() {
	echo "SANDBOXER_TEST_KUBECONFIG=$ADMIN_KUBECONFIG"
	echo "SANDBOXER_TEST_NODE_ADDRESS=$NODE_IP"
	echo "SANDBOXER_TEST_NODE_NAME=$NODE_NAME"
	echo "SANDBOXER_TEST_STORAGE_CLASS=$STORAGE_CLASS"
	echo "SANDBOXER_TEST_KUBECTL=$KUBECTL"
}
case "$CMD" in
env)
	[ -s "$ADMIN_KUBECONFIG" ] || die "no cluster made yet ($ADMIN_KUBECONFIG missing): run cluster.sh up"
	print_env
	exit 0
	;;
status)
	if node_ready; then
		echo "cluster.sh: up: node $NODE_NAME Ready at $NODE_IP" >&2
		exit 0
	fi
	echo "cluster.sh: not up (API server not answering or node not Ready)" >&2
	exit 1
	;;
esac

[ "$(id -u)" = 0 ] || die "must run as root (network namespace, containerd, kubelet)"
command -v go >/dev/null 2>&1 || die "go is not on PATH"
command -v flock >/dev/null 2>&1 || die "flock (util-linux) is not on PATH"

# ------------------------------------------------------------------ build
is_installed() { [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true)" = installed ]; }

apt_install() { # installs what of APT_PKGS is missing (apt waits for a running apt/dpkg)
	local p todo=() aptlog
	for p in "${APT_PKGS[@]}"; do is_installed "$p" || todo+=("$p"); done
	[ ${#todo[@]} = 0 ] && return 0
	log "installing Debian packages: ${todo[*]}"
	aptlog="$(mktemp /tmp/sandboxer-cluster-apt.XXXXXX.log)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get -o DPkg::Lock::Timeout=1800 update -q >>"$aptlog" 2>&1 ||
		{ tail -n 20 "$aptlog" >&2; die "apt-get update failed (log: $aptlog)"; }
	apt-get -o DPkg::Lock::Timeout=1800 install -y -q --no-install-recommends "${todo[@]}" >>"$aptlog" 2>&1 ||
		{ tail -n 20 "$aptlog" >&2; die "apt-get install failed (log: $aptlog)"; }
	rm -f "$aptlog"
}

# The stamps name what a build was made from: the wrapper module's go.mod and
# go.sum for the Kubernetes binaries, the helpers' sources for the helpers. A
# change rebuilds (with Go's build cache, only what changed).
k8s_stamp() { cat "$MODDIR/go.mod" "$MODDIR/go.sum" | sha256sum | cut -d' ' -f1; }
helpers_stamp() { cat "$MODDIR/go.mod" "$MODDIR/go.sum" "$MODDIR"/pause/*.go "$MODDIR"/cri-clean/*.go | sha256sum | cut -d' ' -f1; }
K8S_CMDS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl etcd)

k8s_built() {
	local c
	[ "$(cat "$BIN/.stamp-k8s" 2>/dev/null)" = "$(k8s_stamp)" ] || return 1
	for c in "${K8S_CMDS[@]}"; do [ -x "$BIN/$c" ] || return 1; done
	"$BIN/kube-apiserver" --version 2>/dev/null | grep -x "Kubernetes v$K8S_VERSION" >/dev/null &&
		"$BIN/etcd" --version 2>/dev/null | grep -x "etcd Version: $ETCD_VERSION" >/dev/null
}
helpers_built() {
	[ "$(cat "$BIN/.stamp-helpers" 2>/dev/null)" = "$(helpers_stamp)" ] && [ -x "$BIN/pause" ] && [ -x "$BIN/cri-clean" ]
}

do_build() {
	apt_install
	mkdir -p "$TOOLS_DIR"
	# One build at a time per cache, as tools.sh does (its own lock file, so a
	# tools.sh run beside this one does not wait for us). fd 8: up holds 9.
	exec 8>"$TOOLS_DIR/.lock-kubernetes"
	if ! flock -n 8; then
		log "another run holds $TOOLS_DIR/.lock-kubernetes; waiting for it"
		flock 8
	fi
	mkdir -p "$BIN"
	local pkgs=() c p ldflags
	if ! k8s_built; then
		for c in "${K8S_CMDS[@]}"; do [ "$c" = etcd ] || pkgs+=("k8s.io/kubernetes/cmd/$c"); done
		# The version the components report (and kubectl version shows); as
		# hack/lib/version.sh sets it for release builds.
		ldflags="-s -w"
		for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
			ldflags+=" -X $p.gitVersion=v$K8S_VERSION -X $p.gitMajor=${K8S_VERSION%%.*}"
			ldflags+=" -X $p.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2) -X $p.gitTreeState=clean"
			ldflags+=" -X $p.buildDate=1970-01-01T00:00:00Z"
		done
		log "building Kubernetes v$K8S_VERSION and etcd v$ETCD_VERSION (${K8S_CMDS[*]}) into $BIN (about 10 minutes cold; log: $BIN/build.log)"
		rm -rf "$BIN/out.tmp"
		mkdir -p "$BIN/out.tmp"
		# CGO off: static binaries, as upstream builds them.
		if ! (cd "$MODDIR" && export GOWORK=off CGO_ENABLED=0 GOFLAGS=-mod=readonly &&
			go build -trimpath -ldflags "$ldflags" -o "$BIN/out.tmp/" "${pkgs[@]}" &&
			go build -trimpath -ldflags "-s -w" -o "$BIN/out.tmp/etcd" go.etcd.io/etcd/server/v3) >"$BIN/build.log" 2>&1; then
			tail -n 30 "$BIN/build.log" >&2
			die "Kubernetes build failed (log: $BIN/build.log)"
		fi
		for c in "${K8S_CMDS[@]}"; do mv -f "$BIN/out.tmp/$c" "$BIN/$c"; done
		rm -rf "$BIN/out.tmp"
		k8s_stamp >"$BIN/.stamp-k8s"
		k8s_built || die "the built kube-apiserver or etcd does not report v$K8S_VERSION or v$ETCD_VERSION"
	fi
	if [ "$("$BIN/coredns" -version 2>/dev/null | sed -n 's/^CoreDNS-//p')" != "$COREDNS_VERSION" ]; then
		# Its own module graph (client-go of its own): not the wrapper's.
		log "building CoreDNS v$COREDNS_VERSION into $BIN (about 3 minutes cold; log: $BIN/build-coredns.log)"
		if ! (cd "$BIN" && GOWORK=off CGO_ENABLED=0 GOBIN="$BIN/coredns.tmp" \
			go install -trimpath -ldflags "-s -w" "github.com/coredns/coredns@v$COREDNS_VERSION") >"$BIN/build-coredns.log" 2>&1; then
			tail -n 30 "$BIN/build-coredns.log" >&2
			die "CoreDNS build failed (log: $BIN/build-coredns.log)"
		fi
		mv -f "$BIN/coredns.tmp/coredns" "$BIN/coredns"
		rm -rf "$BIN/coredns.tmp"
	fi
	if ! "$BIN/kube-router" --version 2>&1 | grep -F "version v$KUBE_ROUTER_VERSION," >/dev/null; then
		# Its own module graph too (client-go v0.29).
		log "building kube-router v$KUBE_ROUTER_VERSION into $BIN (about 2 minutes cold; log: $BIN/build-kube-router.log)"
		ldflags="-s -w -X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=v$KUBE_ROUTER_VERSION"
		ldflags+=" -X github.com/cloudnativelabs/kube-router/v2/pkg/version.BuildDate=1970-01-01T00:00:00Z"
		if ! (cd "$BIN" && GOWORK=off CGO_ENABLED=0 GOBIN="$BIN/kube-router.tmp" \
			go install -trimpath -ldflags "$ldflags" "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router@v$KUBE_ROUTER_VERSION") >"$BIN/build-kube-router.log" 2>&1; then
			tail -n 30 "$BIN/build-kube-router.log" >&2
			die "kube-router build failed (log: $BIN/build-kube-router.log)"
		fi
		mv -f "$BIN/kube-router.tmp/kube-router" "$BIN/kube-router"
		rm -rf "$BIN/kube-router.tmp"
	fi
	if ! helpers_built; then
		log "building the pause and cri-clean helpers"
		if ! (cd "$MODDIR" && GOWORK=off CGO_ENABLED=0 GOFLAGS=-mod=readonly \
			go build -trimpath -ldflags "-s -w" -o "$BIN/" ./pause ./cri-clean) >"$BIN/build-helpers.log" 2>&1; then
			tail -n 30 "$BIN/build-helpers.log" >&2
			die "helper build failed (log: $BIN/build-helpers.log)"
		fi
		helpers_stamp >"$BIN/.stamp-helpers"
	fi
	flock -u 8
	exec 8>&-
}

if [ "$CMD" = build ]; then
	do_build
	log "built: $BIN"
	exit 0
fi

# ------------------------------------------------------------------ processes
mkdir -p "$STATE"
chmod 700 "$STATE"
mkdir -p "$CL" "$PKI" "$CONF" "$LOGS" "$PIDS"
chmod 700 "$CL" "$PKI"

# One up or down at a time. Daemons are started with fd 9 closed, or they
# would hold the lock for good.
exec 9>"$CL/.lock"
if ! flock -n 9; then
	log "another cluster.sh up/down holds $CL/.lock; waiting for it"
	flock 9
fi

inns() { nsenter --net="$NETNS_PATH" -- "$@"; }

# alive PID: exists and is not a zombie (pid 1 in some sandboxes reaps late).
alive() { kill -0 "$1" 2>/dev/null && [ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)" != Z ]; }

# daemon_pid NAME: prints the pid of daemon NAME when it runs (its pid file names
# a live process whose program is the one recorded when it started).
daemon_pid() {
	local pid exe
	pid="$(cat "$PIDS/$1.pid" 2>/dev/null)" || return 1
	[ -n "$pid" ] && alive "$pid" || return 1
	exe="$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | sed -n 1p)"
	[ -n "$exe" ] && [ "$exe" = "$(sed -n 2p "$PIDS/$1.cmd" 2>/dev/null)" ] || return 1
	echo "$pid"
}

# fingerprint PROGRAM ARGS...: the arguments, the program's size and time (a
# rebuilt binary), and the digest of each file under the cluster dir they name
# (--flag=FILE or FILE): a changed config file counts as a changed command line.
fingerprint() {
	local a f
	echo "# $(stat -L -c '%s %Y' "$1")"
	for a in "$@"; do
		echo "$a"
		f="${a#--*=}"
		case "$f" in "$CL"/*) [ ! -f "$f" ] || echo "# $(sha256sum "$f" | cut -d' ' -f1)" ;; esac
	done
}

# start_daemon NAME PROGRAM ARGS...: runs it in the node's network namespace, in a
# session of its own (it outlives this shell), logging to logs/NAME.log. When it
# already runs with the same command line and config files, leaves it; else
# (re)starts it. nsenter, setsid (not a group leader here: no fork) and nohup
# all exec, so $! is the daemon's own pid.
start_daemon() {
	local name="$1" cmdf="$PIDS/$1.cmd" new
	shift
	new="$(fingerprint "$@")"
	if daemon_pid "$name" >/dev/null; then
		[ "$new" = "$(cat "$cmdf")" ] && return 0
		log "$name: its command line changed; restarting it"
		stop_daemon "$name"
	fi
	printf '%s\n' "$new" >"$cmdf"
	echo "---- $(date -u +%FT%TZ) cluster.sh starts $name" >>"$LOGS/$name.log"
	nsenter --net="$NETNS_PATH" -- setsid nohup "$@" >>"$LOGS/$name.log" 2>&1 </dev/null 9>&- &
	echo "$!" >"$PIDS/$name.pid"
}

# stop_daemon NAME [SECONDS]: SIGTERM, then SIGKILL when it has not exited in time.
stop_daemon() {
	local name="$1" secs="${2:-30}" pid i
	if pid="$(daemon_pid "$name")"; then
		kill "$pid" 2>/dev/null || true
		for ((i = 0; i < secs * 10; i++)); do alive "$pid" || break; sleep 0.1; done
		if alive "$pid"; then
			log "$name (pid $pid) did not exit on SIGTERM within ${secs}s; killing it"
			kill -9 "$pid" 2>/dev/null || true
			for ((i = 0; i < 50; i++)); do alive "$pid" || break; sleep 0.1; done
		fi
	fi
	rm -f "$PIDS/$name.pid"
}

# wait_for NAME SECONDS WHAT CMD...: until CMD succeeds; fails with the tail of
# NAME's log when NAME dies or time runs out.
wait_for() {
	local name="$1" secs="$2" what="$3" i
	shift 3
	for ((i = 0; i < secs * 2; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		daemon_pid "$name" >/dev/null || break
		sleep 0.5
	done
	echo "cluster.sh: ERROR: $what: not within ${secs}s$(daemon_pid "$name" >/dev/null || echo " ($name exited)"); last lines of $LOGS/$name.log:" >&2
	tail -n 25 "$LOGS/$name.log" >&2
	exit 1
}

# ------------------------------------------------------------------ down
# pids_in_netns: processes whose network namespace is the node's.
pids_in_netns() {
	local ino p
	[ -e "$NETNS_PATH" ] || return 0
	ino="net:[$(stat -L -c %i "$NETNS_PATH")]"
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/ns/net" 2>/dev/null)" = "$ino" ] && echo "${p#/proc/}"
	done
	return 0
}
# our_shims: containerd-shim processes of our containerd (its socket in their command line).
our_shims() {
	local p
	for p in /proc/[0-9]*; do
		tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -F -- "-address $SOCK " >/dev/null && echo "${p#/proc/}"
	done
	return 0
}
# kubepods_pids: processes in the cgroups our kubelet makes (kubepods*, at each hierarchy's root).
kubepods_pids() {
	find /sys/fs/cgroup/*/kubepods* /sys/fs/cgroup/kubepods* -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u
	return 0
}
kill_pids() { # SIGNAL PID...
	local sig="$1" p
	shift
	for p in "$@"; do kill "-$sig" "$p" 2>/dev/null || true; done
}
# umount_under DIR...: unmounts every mount point at or under the dirs, deepest first.
umount_under() {
	local d m
	for d in "$@"; do
		awk -v d="$d" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo
	done | sort -ru | while read -r m; do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || log "cannot unmount $m"
	done
}

do_down() {
	local n pids shims i
	# The kubelet and kube-proxy first, so nothing restarts what goes next.
	# (kube-router leaves its iptables rules and ipsets: they go with the namespace.)
	for n in kube-router kubelet kube-proxy kube-scheduler kube-controller-manager; do stop_daemon "$n"; done
	if daemon_pid containerd >/dev/null && [ -x "$BIN/cri-clean" ]; then
		# As the kubelet would: stop every pod (its containers, its CNI network,
		# its network namespace), so that stopping containerd leaves no shim behind.
		timeout 180 "$BIN/cri-clean" "unix://$SOCK" 2>>"$LOGS/cri-clean.log" || log "cri-clean failed (log: $LOGS/cri-clean.log); killing what is left"
	fi
	stop_daemon containerd
	# Leftovers of a crash, if any: pods' processes, shims of our containerd.
	mapfile -t pids < <(kubepods_pids)
	mapfile -t shims < <(our_shims)
	if [ ${#pids[@]} -gt 0 ] || [ ${#shims[@]} -gt 0 ]; then
		log "killing ${#pids[@]} leftover pod processes and ${#shims[@]} shims"
		kill_pids KILL "${pids[@]}" "${shims[@]}"
		sleep 1
	fi
	for n in kube-apiserver etcd; do stop_daemon "$n"; done
	# Anything else still in the node's namespace was started by us (a daemon whose
	# pid file got lost).
	mapfile -t pids < <(pids_in_netns)
	if [ ${#pids[@]} -gt 0 ]; then
		log "killing ${#pids[@]} leftover processes in network namespace $NETNS: ${pids[*]}"
		kill_pids TERM "${pids[@]}"
		for ((i = 0; i < 50; i++)); do [ -z "$(pids_in_netns)" ] && break; sleep 0.1; done
		mapfile -t pids < <(pids_in_netns)
		kill_pids KILL "${pids[@]}"
	fi
	# What the kubelet mounted (projected and secret volumes: tmpfs under its root
	# dir) and containerd's leftovers (rootfs, shm, pod network namespaces under
	# its state dir).
	umount_under "$VAR" "$RUN"
	# The kubelet's cgroups, deepest first (rmdir of an empty cgroup removes it).
	find /sys/fs/cgroup/*/kubepods* /sys/fs/cgroup/kubepods* -depth -type d -exec rmdir {} \; 2>/dev/null || true
	# The namespace takes its veth pair, the pod bridge and all its iptables rules along.
	if [ -e "$NETNS_PATH" ]; then ip netns delete "$NETNS" || log "ip netns delete $NETNS failed"; fi
	if ip link show "$VETH_HOST" >/dev/null 2>&1; then ip link delete "$VETH_HOST" || true; fi
	rm -rf "$RUN"
	rm -f "$PIDS"/*.pid
}

if [ "$CMD" = down ]; then
	do_down
	log "down"
	exit 0
fi

# ------------------------------------------------------------------ up: checks
do_build
for c in ip nsenter setsid nohup sysctl openssl iptables ipset containerd ctr runc docker curl timeout sha256sum tar; do
	command -v "$c" >/dev/null 2>&1 || die "'$c' not found (cluster.sh build installs it)"
done
for c in bridge host-local loopback portmap; do
	[ -x "$CNI_BIN/$c" ] || die "CNI plugin $CNI_BIN/$c not found (containernetworking-plugins)"
done
for img in "${IMAGES[@]}"; do
	docker image inspect "$img" >/dev/null 2>&1 || die "docker image $img not found: run scripts/harness/up.sh first"
done
mkdir -p "$RUN" "$VAR"
chmod 700 "$RUN" "$VAR"

# ------------------------------------------------------------------ network
ensure_network() {
	[ -e "$NETNS_PATH" ] || ip netns add "$NETNS"
	if ! ip link show "$VETH_HOST" >/dev/null 2>&1; then
		inns ip link delete eth0 2>/dev/null || true
		ip link add "$VETH_HOST" type veth peer name eth0 netns "$NETNS"
	fi
	ip addr replace "$HOST_IP/24" dev "$VETH_HOST"
	ip link set "$VETH_HOST" up
	inns ip link set lo up
	inns ip addr replace "$NODE_IP/24" dev eth0
	inns ip link set eth0 up
	# Clusters of earlier versions of this script held the DNS address on
	# the loopback: now it is kube-dns's Service.
	inns ip addr del "$CLUSTER_DNS/32" dev lo 2>/dev/null || true
	# In the namespace only: routing between pods, the node and the host, and
	# iptables (kube-proxy's rules) seeing traffic between pods on the bridge
	# (a pod reaching a Service whose endpoint is another pod on the bridge).
	inns sysctl -q -w net.ipv4.ip_forward=1
	[ -e /proc/sys/net/bridge/bridge-nf-call-iptables ] || modprobe br_netfilter 2>/dev/null || true
	inns sysctl -q -w net.bridge.bridge-nf-call-iptables=1 ||
		die "cannot set net.bridge.bridge-nf-call-iptables in $NETNS (br_netfilter module missing?)"
}
ensure_network

# ------------------------------------------------------------------ certificates
# openssl: a CA, and a key and certificate per identity (P-256), signed by it;
# a second CA for the front proxy (the API server's requestheader
# authentication, which controller-manager and scheduler look up).
CA_DAYS=3650
if [ ! -s "$PKI/ca.crt" ] || [ ! -s "$PKI/ca.key" ]; then rm -f "$PKI"/*; fi
mkca() { # NAME CN
	[ -s "$PKI/$1.crt" ] && [ -s "$PKI/$1.key" ] && return 0
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$PKI/$1.key" 2>/dev/null
	openssl req -x509 -new -key "$PKI/$1.key" -subj "/CN=$2" -days "$CA_DAYS" -out "$PKI/$1.crt" \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null ||
		die "openssl: cannot make the $1 CA"
}
mkca ca sandboxer-k8s-ca
mkca front-proxy-ca sandboxer-k8s-front-proxy-ca
# cert NAME SUBJECT EXTKEYUSAGE [SANS [CA]]: PKI/NAME.{key,crt}, once.
cert() {
	local name="$1" subj="$2" eku="$3" sans="${4:-}" ca="${5:-ca}" ext
	[ -s "$PKI/$name.crt" ] && [ -s "$PKI/$name.key" ] && return 0
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$PKI/$name.key" 2>/dev/null
	ext="$PKI/$name.ext"
	{
		echo "basicConstraints=critical,CA:FALSE"
		echo "keyUsage=critical,digitalSignature,keyEncipherment"
		echo "extendedKeyUsage=$eku"
		[ -z "$sans" ] || echo "subjectAltName=$sans"
	} >"$ext"
	openssl req -new -key "$PKI/$name.key" -subj "$subj" 2>/dev/null |
		openssl x509 -req -CA "$PKI/$ca.crt" -CAkey "$PKI/$ca.key" -CAcreateserial -days "$CA_DAYS" \
			-extfile "$ext" -out "$PKI/$name.crt" 2>/dev/null || die "openssl: cannot make the $name certificate"
	rm -f "$ext"
}
cert apiserver "/CN=kube-apiserver" serverAuth \
	"DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,DNS:$NODE_NAME,IP:$NODE_IP,IP:$KUBERNETES_SVC_IP,IP:127.0.0.1"
# The API server's identity towards kubelets (logs, exec, port-forward): system:masters.
cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
cert admin "/O=system:masters/CN=sandboxer-admin" clientAuth
cert controller-manager "/CN=system:kube-controller-manager" clientAuth
cert scheduler "/CN=system:kube-scheduler" clientAuth
cert kube-proxy "/CN=system:kube-proxy" clientAuth
cert kube-router "/CN=system:kube-router" clientAuth
cert kubelet-client "/O=system:nodes/CN=system:node:$NODE_NAME" clientAuth
cert kubelet-serving "/CN=$NODE_NAME" serverAuth "DNS:$NODE_NAME,IP:$NODE_IP"
cert front-proxy-client "/CN=front-proxy-client" clientAuth "" front-proxy-ca
# The service-account token signing key pair.
if [ ! -s "$PKI/sa.key" ] || [ ! -s "$PKI/sa.pub" ]; then
	openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$PKI/sa.key" 2>/dev/null
	openssl pkey -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
fi
chmod 600 "$PKI"/*.key

# kubeconfig FILE USER: certificates embedded, so the file stands alone.
kubeconfig() {
	local f="$1" user="$2"
	cat >"$f.new" <<-EOF
	apiVersion: v1
	kind: Config
	clusters:
	- name: $NODE_NAME
	  cluster:
	    server: https://$NODE_IP:6443
	    certificate-authority-data: $(base64 -w0 <"$PKI/ca.crt")
	users:
	- name: $user
	  user:
	    client-certificate-data: $(base64 -w0 <"$PKI/$user.crt")
	    client-key-data: $(base64 -w0 <"$PKI/$user.key")
	contexts:
	- name: $NODE_NAME
	  context:
	    cluster: $NODE_NAME
	    user: $user
	current-context: $NODE_NAME
	EOF
	chmod 600 "$f.new"
	mv -f "$f.new" "$f"
}
kubeconfig "$ADMIN_KUBECONFIG" admin
for u in controller-manager scheduler kube-proxy kube-router kubelet-client; do kubeconfig "$CONF/$u.kubeconfig" "$u"; done

# ------------------------------------------------------------------ containerd
mkdir -p "$CONF/cni" "$VAR/containerd" "$RUN/containerd"
cat >"$CONF/containerd.toml" <<EOF
# Generated by scripts/harness/cluster.sh: a containerd of the harness cluster's
# own, apart from the machine's (dockerd's) one.
version = 2
root = "$VAR/containerd"
state = "$RUN/containerd"
# The runtime (runc) and the CRI plugin; nothing of the rest is needed.
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "$SOCK"

[ttrpc]
  address = "$SOCK.ttrpc"

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "$VAR/containerd-opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # Pods' network namespaces under the state dir, not /run/netns: down sweeps them.
  netns_mounts_under_state_dir = true
  enable_selinux = false
  # This machine has no CAP_SYS_RESOURCE (not even root): runc cannot lower a
  # process's oom_score_adj below containerd's own, as the kubelet asks for pod
  # sandboxes (-998) and Guaranteed pods (-997), and fails to start them.
  # containerd raises such values to its own (0) instead.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        # runc's state apart from dockerd's containers'.
        Root = "$RUN/runc"
        # The kubelet's cgroup driver: cgroupfs (no systemd here).
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN"
    conf_dir = "$CONF/cni"
EOF
# The pod network: a bridge cni0 in the node's namespace, addresses from
# host-local (its allocations under /run, cleared with it), the bridge as the
# pods' gateway; hairpin so a pod reaches itself through its Service; portmap
# for hostPort.
cat >"$CONF/cni/10-sandboxer.conflist.new" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "sandboxer-k8s",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$POD_CIDR", "gateway": "${POD_CIDR%.0/24}.1"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$RUN/cni-ipam"
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
mv -f "$CONF/cni/10-sandboxer.conflist.new" "$CONF/cni/10-sandboxer.conflist"

ctr_() { ctr -a "$SOCK" -n k8s.io "$@"; }
start_daemon containerd "$(command -v containerd)" --config "$CONF/containerd.toml"
wait_for containerd 60 "containerd answering on $SOCK" ctr_ version

# ------------------------------------------------------------------ images
# image_present REF: containerd has an image of that name.
image_present() { [ -n "$(ctr_ images ls -q "name==$1" 2>/dev/null)" ]; }
IMGSTAMPS="$CL/images"
mkdir -p "$IMGSTAMPS"
# single_binary_image REF BINARY STAMP: an image of one static binary as its
# entrypoint, as a docker-archive (what `ctr images import` reads), made again
# when the binary changed: the pause image and CoreDNS's.
single_binary_image() {
	local ref="$1" bin="$2" stamp="$3" id tmp layer name
	name="$(basename "$bin")"
	id="$(sha256sum "$bin" | cut -d' ' -f1)"
	if image_present "$ref" && [ "$(cat "$IMGSTAMPS/$stamp" 2>/dev/null)" = "$id" ]; then return 0; fi
	tmp="$(mktemp -d)"
	mkdir "$tmp/rootfs"
	install -m 0755 "$bin" "$tmp/rootfs/$name"
	tar -C "$tmp/rootfs" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf "$tmp/layer.tar" "$name"
	layer="sha256:$(sha256sum "$tmp/layer.tar" | cut -d' ' -f1)"
	printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":["/%s"]},"rootfs":{"type":"layers","diff_ids":["%s"]}}' "$name" "$layer" >"$tmp/config.json"
	printf '[{"Config":"config.json","RepoTags":["%s"],"Layers":["layer.tar"]}]' "$ref" >"$tmp/manifest.json"
	tar -C "$tmp" -cf - manifest.json config.json layer.tar | ctr_ images import - >/dev/null ||
		{ rm -rf "$tmp"; die "ctr images import of $ref failed"; }
	rm -rf "$tmp"
	echo "$id" >"$IMGSTAMPS/$stamp"
}
single_binary_image "$PAUSE_IMAGE" "$BIN/pause" pause
single_binary_image "$COREDNS_IMAGE" "$BIN/coredns" coredns
# The harness's docker images, under the names a pod spec's "NAME:TAG" means
# (docker.io/library/NAME:TAG); again when docker's copy changed.
for img in "${IMAGES[@]}" "${OPTIONAL_IMAGES[@]}"; do
	id="$(docker image inspect -f '{{.Id}}' "$img" 2>/dev/null)" || { log "docker has no $img (yet): not imported"; continue; }
	ref="docker.io/library/$img"
	if image_present "$ref" && [ "$(cat "$IMGSTAMPS/${img//[:\/]/_}" 2>/dev/null)" = "$id" ]; then continue; fi
	log "importing $img into the cluster's containerd"
	docker save "$img" | ctr_ images import - >/dev/null || die "importing $img into containerd failed"
	image_present "$ref" || die "containerd does not list $ref after importing $img"
	echo "$id" >"$IMGSTAMPS/${img//[:\/]/_}"
done

# ------------------------------------------------------------------ etcd
mkdir -p "$CL/etcd"
chmod 700 "$CL/etcd"
# On the namespace's loopback only, plain HTTP.
start_daemon etcd "$BIN/etcd" --name "$NODE_NAME" --data-dir "$CL/etcd" \
	--listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
	--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
	--initial-cluster "$NODE_NAME=http://127.0.0.1:2380" --initial-cluster-state new \
	--log-level warn
etcd_ok() { inns curl -fsS --max-time 2 http://127.0.0.1:2379/health | grep '"health":"true"'; }
wait_for etcd 60 "etcd healthy" etcd_ok

# ------------------------------------------------------------------ control plane
start_daemon kube-apiserver "$BIN/kube-apiserver" \
	--advertise-address="$NODE_IP" --bind-address=0.0.0.0 --secure-port=6443 \
	--etcd-servers=http://127.0.0.1:2379 \
	--client-ca-file="$PKI/ca.crt" \
	--tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
	--kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
	--kubelet-certificate-authority="$PKI/ca.crt" --kubelet-preferred-address-types=InternalIP \
	--service-account-issuer=https://kubernetes.default.svc.cluster.local \
	--service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
	--service-cluster-ip-range="$SERVICE_CIDR" \
	--authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
	--requestheader-client-ca-file="$PKI/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client \
	--requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
	--requestheader-extra-headers-prefix=X-Remote-Extra- \
	--proxy-client-cert-file="$PKI/front-proxy-client.crt" --proxy-client-key-file="$PKI/front-proxy-client.key" \
	--allow-privileged=true --profiling=false --v=1
wait_for kube-apiserver 120 "kube-apiserver ready (https://$NODE_IP:6443/readyz)" kc --request-timeout=5s get --raw /readyz

start_daemon kube-controller-manager "$BIN/kube-controller-manager" \
	--kubeconfig="$CONF/controller-manager.kubeconfig" \
	--authentication-kubeconfig="$CONF/controller-manager.kubeconfig" \
	--authorization-kubeconfig="$CONF/controller-manager.kubeconfig" \
	--bind-address=127.0.0.1 --leader-elect=false --cluster-name="$NODE_NAME" \
	--service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
	--use-service-account-credentials=true \
	--cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
	--service-cluster-ip-range="$SERVICE_CIDR" \
	--enable-hostpath-provisioner=true \
	--profiling=false --v=1
start_daemon kube-scheduler "$BIN/kube-scheduler" \
	--kubeconfig="$CONF/scheduler.kubeconfig" \
	--authentication-kubeconfig="$CONF/scheduler.kubeconfig" \
	--authorization-kubeconfig="$CONF/scheduler.kubeconfig" \
	--bind-address=127.0.0.1 --leader-elect=false --profiling=false --v=1

# ------------------------------------------------------------------ node
mkdir -p "$VAR/kubelet" "$VAR/pod-logs"
cat >"$CONF/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: $PKI/kubelet-serving.crt
tlsPrivateKeyFile: $PKI/kubelet-serving.key
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: $PKI/ca.crt
authorization:
  mode: Webhook
containerRuntimeEndpoint: unix://$SOCK
cgroupDriver: cgroupfs
# This machine has cgroup v1 (hybrid); 1.34 still runs on it when told so.
failCgroupV1: false
failSwapOn: false
# No CAP_SYS_RESOURCE here (see containerd.toml): the default -999 cannot be set.
oomScoreAdj: 0
podLogsDir: $VAR/pod-logs
# No cluster DNS (see the header): a name server address that refuses queries.
clusterDNS: [$CLUSTER_DNS]
clusterDomain: cluster.local
resolvConf: ""
# Image GC off (the imported images cannot be pulled again) and eviction only
# when really out of space, so a disk filled by other tests does not taint the node.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
  imagefs.inodesFree: 1%
evictionPressureTransitionPeriod: 10s
EOF
start_daemon kubelet "$BIN/kubelet" --config="$CONF/kubelet.yaml" \
	--kubeconfig="$CONF/kubelet-client.kubeconfig" --root-dir="$VAR/kubelet" \
	--hostname-override="$NODE_NAME" --node-ip="$NODE_IP" --v=1

# Written only when it changes: a running kube-proxy watches the file and
# exits when it is rewritten, even with the same content, and an `up` of a
# cluster that is up must leave it running.
cat >"$CONF/kube-proxy.yaml.new" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: $CONF/kube-proxy.kubeconfig
mode: iptables
hostnameOverride: $NODE_NAME
clusterCIDR: $POD_CIDR
# NodePorts on the node address only.
nodePortAddresses: ["$NODE_IP/32"]
healthzBindAddress: 127.0.0.1:10256
oomScoreAdj: 0
metricsBindAddress: 127.0.0.1:10249
# nf_conntrack_max (and its hash size) are the whole machine's: leave them.
conntrack:
  maxPerCore: 0
  min: 0
EOF
if cmp -s "$CONF/kube-proxy.yaml.new" "$CONF/kube-proxy.yaml"; then
	rm -f "$CONF/kube-proxy.yaml.new"
else
	mv -f "$CONF/kube-proxy.yaml.new" "$CONF/kube-proxy.yaml"
fi
start_daemon kube-proxy "$BIN/kube-proxy" --config="$CONF/kube-proxy.yaml" --v=1

# ------------------------------------------------------------------ storage
objects="$CONF/storage.yaml"
cat >"$objects" <<EOF
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: $STORAGE_CLASS
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: kubernetes.io/host-path
reclaimPolicy: Delete
volumeBindingMode: Immediate
EOF
# A class's provisioner cannot change: one of an earlier version of this
# script (static PVs, no provisioner) goes, with its PVs no claim holds.
if [ "$(kc get storageclass "$STORAGE_CLASS" -o 'jsonpath={.provisioner}' 2>/dev/null)" = kubernetes.io/no-provisioner ]; then
	kc delete storageclass "$STORAGE_CLASS" >/dev/null
	kc get pv -l sandboxer.local/pool=harness -o 'jsonpath={range .items[?(@.status.phase!="Bound")]}{.metadata.name}{"\n"}{end}' |
		while read -r pv; do [ -z "$pv" ] || kc delete pv "$pv" --wait=false >/dev/null; done
fi
kc apply -f "$objects" >"$LOGS/storage-apply.log" 2>&1 ||
	{ tail -n 20 "$LOGS/storage-apply.log" >&2; die "applying $objects failed (log: $LOGS/storage-apply.log)"; }

# ------------------------------------------------------------------ dns
# CoreDNS as kubeadm deploys it, less what needs another DNS server
# (forward) or metrics; probes on its health and ready ports.
objects="$CONF/dns.yaml"
cat >"$objects" <<EOF
apiVersion: v1
kind: ServiceAccount
metadata: {name: coredns, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:coredns"}
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:coredns"}
subjects:
- {kind: ServiceAccount, name: coredns, namespace: kube-system}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: coredns, namespace: kube-system}
data:
  Corefile: |
    .:53 {
        errors
        health :8080
        ready :8181
        kubernetes cluster.local in-addr.arpa ip6.arpa {
            pods insecure
            fallthrough in-addr.arpa ip6.arpa
        }
        cache 30
    }
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: coredns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  replicas: 1
  selector: {matchLabels: {k8s-app: kube-dns}}
  template:
    metadata: {labels: {k8s-app: kube-dns}}
    spec:
      serviceAccountName: coredns
      dnsPolicy: Default
      terminationGracePeriodSeconds: 5
      containers:
      - name: coredns
        image: $COREDNS_IMAGE
        imagePullPolicy: Never
        args: ["-conf", "/etc/coredns/Corefile"]
        ports:
        - {name: dns, containerPort: 53, protocol: UDP}
        - {name: dns-tcp, containerPort: 53, protocol: TCP}
        livenessProbe: {httpGet: {path: /health, port: 8080}, periodSeconds: 10}
        readinessProbe: {httpGet: {path: /ready, port: 8181}, periodSeconds: 1}
        volumeMounts: [{name: config, mountPath: /etc/coredns, readOnly: true}]
      volumes: [{name: config, configMap: {name: coredns}}]
---
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  clusterIP: $CLUSTER_DNS
  selector: {k8s-app: kube-dns}
  ports:
  - {name: dns, port: 53, protocol: UDP}
  - {name: dns-tcp, port: 53, protocol: TCP}
EOF
kc apply -f "$objects" >"$LOGS/dns-apply.log" 2>&1 ||
	{ tail -n 20 "$LOGS/dns-apply.log" >&2; die "applying $objects failed (log: $LOGS/dns-apply.log)"; }

# ------------------------------------------------------------------ wait
node_is_ready() {
	[ "$(kc --request-timeout=5s get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" = True ]
}
wait_for kubelet 180 "node $NODE_NAME Ready" node_is_ready

# ------------------------------------------------------------------ network policy
# kube-router as the NetworkPolicy enforcer only (see the header). It reads
# its node object when it starts (and exits without it): after the node is
# registered. What it watches, read-only.
objects="$CONF/kube-router.yaml"
cat >"$objects" <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "sandboxer:kube-router"}
rules:
- apiGroups: [""]
  resources: [namespaces, pods, services, nodes, endpoints]
  verbs: [get, list, watch]
- apiGroups: [networking.k8s.io]
  resources: [networkpolicies]
  verbs: [get, list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "sandboxer:kube-router"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "sandboxer:kube-router"}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:kube-router"}
EOF
kc apply -f "$objects" >"$LOGS/kube-router-apply.log" 2>&1 ||
	{ tail -n 20 "$LOGS/kube-router-apply.log" >&2; die "applying $objects failed (log: $LOGS/kube-router-apply.log)"; }
start_daemon kube-router "$BIN/kube-router" --kubeconfig="$CONF/kube-router.kubeconfig" \
	--hostname-override="$NODE_NAME" \
	--run-firewall=true --run-router=false --run-service-proxy=false --run-loadbalancer=false \
	--service-cluster-ip-range="$SERVICE_CIDR" --service-node-port-range=30000-32767 \
	--health-port="$KUBE_ROUTER_HEALTH_PORT" --metrics-port=0 --v=1
wait_for kube-controller-manager 120 "service account default/default" kc --request-timeout=5s get serviceaccount default -n default
for n in containerd etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kube-router; do
	daemon_pid "$n" >/dev/null || { tail -n 25 "$LOGS/$n.log" >&2; die "$n is not running (log: $LOGS/$n.log)"; }
done
wait_for kube-proxy 60 "kube-proxy healthy" inns curl -fsS --max-time 2 http://127.0.0.1:10256/healthz
wait_for kube-router 60 "kube-router healthy" inns curl -fsS --max-time 2 "http://127.0.0.1:$KUBE_ROUTER_HEALTH_PORT/healthz"
dns_ready() {
	[ "$(kc --request-timeout=5s -n kube-system get deployment coredns -o 'jsonpath={.status.readyReplicas}')" = 1 ]
}
wait_for kubelet 120 "CoreDNS ready (kube-system/coredns)" dns_ready

print_env | sed 's/^/export /' >"$CL/env.new"
mv -f "$CL/env.new" "$CL/env"
log "up: node $NODE_NAME Ready at $NODE_IP; kubeconfig $ADMIN_KUBECONFIG (env: cluster.sh env)"
