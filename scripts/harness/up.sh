#!/usr/bin/env bash
# Stands up the acceptance-test harness (idempotent): dockerd (if not running), the
# sandboxer-busybox:latest and sandboxer-postgres:15 images, and two root sshd instances on 127.0.0.1 with generated
# keys (root, and a non-root user in the docker group). Writes STATE/env (export lines for tests) and prints its path as the last line.
set -euo pipefail

STATE="${SANDBOXER_HARNESS_DIR:-$HOME/.cache/sandboxer-harness}"
PORT1="${SANDBOXER_SSH_PORT:-2222}"
PORT2="${SANDBOXER_SSH_PORT2:-2223}"
IMAGE="sandboxer-busybox:latest"
PG_IMAGE="sandboxer-postgres:15"
PG_DIR=/usr/lib/postgresql/15
NONROOT_USER="${SANDBOXER_NONROOT_USER:-sandboxer-ci}"

die() { echo "up.sh: ERROR: $*" >&2; exit 1; }

for c in docker dockerd ssh ssh-keygen tar; do
	command -v "$c" >/dev/null 2>&1 || die "'$c' not found; run scripts/harness/install.sh first"
done
if [ ! -x /bin/busybox ] || [ "$(dpkg-query -W -f='${db:Status-Status}' busybox-static 2>/dev/null)" != installed ]; then
	die "static /bin/busybox (busybox-static) not found; run scripts/harness/install.sh first"
fi
[ -x /usr/sbin/sshd ] || die "/usr/sbin/sshd not found; run scripts/harness/install.sh first"
# The sftp subsystem as distributions ship it: a program of its own, not sshd's built-in one.
SFTP_SERVER=/usr/lib/openssh/sftp-server
[ -x "$SFTP_SERVER" ] || die "$SFTP_SERVER (openssh-sftp-server) not found; run scripts/harness/install.sh first"
for f in postgres initdb pg_ctl psql pg_isready; do
	[ -x "$PG_DIR/bin/$f" ] || die "$PG_DIR/bin/$f not found (postgresql-15, postgresql-client-15); run scripts/harness/install.sh first"
done
[ "$(id -u)" = 0 ] || die "must run as root (dockerd and sshd for root login)"

mkdir -p "$STATE"
chmod 700 "$STATE"
STATE="$(cd "$STATE" && pwd)"

# ------------------------------------------------------------------ dockerd
if ! docker info >/dev/null 2>&1; then
	# Defaults (overlay2, iptables on) work in this sandbox; extra flags can be given in
	# SANDBOXER_DOCKERD_FLAGS (e.g. "--storage-driver=vfs --iptables=false").
	# setsid: its own session, so it outlives the shell (or CI job) that started it.
	# shellcheck disable=SC2086
	setsid nohup dockerd ${SANDBOXER_DOCKERD_FLAGS:-} >>"$STATE/dockerd.log" 2>&1 </dev/null &
	echo "$!" >"$STATE/dockerd.pid"
	for _ in $(seq 1 60); do
		docker info >/dev/null 2>&1 && break
		kill -0 "$(cat "$STATE/dockerd.pid")" 2>/dev/null || break
		sleep 1
	done
	if ! docker info >/dev/null 2>&1; then
		echo "up.sh: ERROR: dockerd did not come up within 60s; last lines of $STATE/dockerd.log:" >&2
		tail -n 20 "$STATE/dockerd.log" >&2
		exit 1
	fi
fi

# ------------------------------------------------------------------ image
if ! docker image inspect "$IMAGE" >/dev/null 2>&1; then
	rootfs="$(mktemp -d)"
	trap 'rm -rf "$rootfs"' EXIT
	mkdir -p "$rootfs"/{bin,sbin,usr/bin,usr/sbin,etc,root,tmp,dev,proc,sys,var/tmp}
	chmod 1777 "$rootfs/tmp" "$rootfs/var/tmp"
	cp "$(readlink -f /bin/busybox)" "$rootfs/bin/busybox"
	/bin/busybox --list-full | while read -r applet; do
		[ -e "$rootfs/$applet" ] || [ -L "$rootfs/$applet" ] || ln -s /bin/busybox "$rootfs/$applet"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$rootfs/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$rootfs/etc/group"
	tar -C "$rootfs" -c . | docker import \
		-c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
		-c 'CMD ["/bin/sh"]' - "$IMAGE" >/dev/null || die "docker import of $IMAGE failed"
	rm -rf "$rootfs"
	trap - EXIT
fi
# A PostgreSQL 15 image, for tests of a database reached through a tunnel:
# Debian's server binaries with exactly the libraries ldd names for them,
# busybox for a shell, and an entrypoint that makes the cluster on first start
# (trust authentication, listening on every address of the container).
if ! docker image inspect "$PG_IMAGE" >/dev/null 2>&1; then
	rootfs="$(mktemp -d)"
	trap 'rm -rf "$rootfs"' EXIT
	mkdir -p "$rootfs"/{bin,sbin,usr/bin,usr/sbin,usr/local/bin,etc,tmp,dev,proc,sys,var/lib/postgresql,var/run/postgresql}
	mkdir -p "$rootfs$PG_DIR/bin" "$rootfs$PG_DIR/lib" "$rootfs/usr/share/postgresql"
	chmod 1777 "$rootfs/tmp"
	cp "$(readlink -f /bin/busybox)" "$rootfs/bin/busybox"
	/bin/busybox --list-full | while read -r applet; do
		[ -e "$rootfs/$applet" ] || [ -L "$rootfs/$applet" ] || ln -s /bin/busybox "$rootfs/$applet"
	done
	for f in postgres initdb pg_ctl psql pg_isready; do cp "$PG_DIR/bin/$f" "$rootfs$PG_DIR/bin/"; done
	# The modules initdb loads (plpgsql, the snowball dictionaries) and the
	# encoding conversions; not the JIT (llvmjit.so and its bitcode would
	# bring 130 MB of LLVM, and the server runs without it).
	for f in "$PG_DIR"/lib/*.so; do
		case "${f##*/}" in llvmjit*) ;; *) cp "$f" "$rootfs$PG_DIR/lib/" ;; esac
	done
	cp -r /usr/share/postgresql/15 "$rootfs/usr/share/postgresql/" # initdb's catalog and configuration templates
	for f in "$rootfs$PG_DIR"/bin/* "$rootfs$PG_DIR"/lib/*.so; do ldd "$f"; done |
		awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u |
		while read -r lib; do cp --parents -L "$lib" "$rootfs/"; done
	[ -e "$rootfs/lib64/ld-linux-x86-64.so.2" ] || cp --parents -L /lib64/ld-linux-x86-64.so.2 "$rootfs/"
	printf 'root:x:0:0:root:/root:/bin/sh\npostgres:x:70:70:PostgreSQL:/var/lib/postgresql:/bin/sh\n' >"$rootfs/etc/passwd"
	printf 'root:x:0:\npostgres:x:70:\n' >"$rootfs/etc/group"
	chown 70:70 "$rootfs/var/lib/postgresql" "$rootfs/var/run/postgresql"
	cat >"$rootfs/usr/local/bin/pg-entrypoint" <<-'EOF'
	#!/bin/sh
	# Makes the cluster on first start, then runs the server in the foreground.
	set -e
	if [ ! -s "$PGDATA/PG_VERSION" ]; then
		initdb -D "$PGDATA" -U postgres --auth=trust --no-locale --encoding=UTF8 >/dev/null
		echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
		echo "host all all all trust" >>"$PGDATA/pg_hba.conf"
	fi
	exec postgres -D "$PGDATA"
	EOF
	chmod 755 "$rootfs/usr/local/bin/pg-entrypoint"
	tar -C "$rootfs" -c . | docker import \
		-c "ENV PATH=$PG_DIR/bin:/usr/local/bin:/usr/bin:/bin" \
		-c 'ENV PGDATA=/var/lib/postgresql/data' -c 'ENV TZ=UTC' \
		-c 'USER postgres' -c 'EXPOSE 5432' \
		-c 'ENTRYPOINT ["/usr/local/bin/pg-entrypoint"]' - "$PG_IMAGE" >/dev/null || die "docker import of $PG_IMAGE failed"
	rm -rf "$rootfs"
	trap - EXIT
fi
# Smoke test: a user-defined network plus a container run on it.
net="sandboxer-harness-check-$$"
docker network create "$net" >/dev/null 2>&1 || die "docker network create failed (dockerd log: $STATE/dockerd.log)"
out="$(docker run --rm --network "$net" "$IMAGE" sh -c 'echo ok' 2>&1)" || {
	docker network rm "$net" >/dev/null 2>&1 || true
	die "docker run $IMAGE failed: $out"
}
docker network rm "$net" >/dev/null 2>&1 || true
[ "$out" = ok ] || die "docker run $IMAGE printed '$out', expected 'ok'"

# ------------------------------------------------------------------ sshd
mkdir -p /run/sshd
chmod 755 /run/sshd
CLIENT_KEY="$STATE/client_ed25519"
if [ ! -s "$CLIENT_KEY" ] || [ ! -s "$CLIENT_KEY.pub" ]; then
	rm -f "$CLIENT_KEY" "$CLIENT_KEY.pub"
	ssh-keygen -q -t ed25519 -N '' -C sandboxer-harness-client -f "$CLIENT_KEY" >/dev/null
fi
chmod 600 "$CLIENT_KEY"
cp "$CLIENT_KEY.pub" "$STATE/authorized_keys"
chmod 600 "$STATE/authorized_keys"

# pid_alive PIDFILE: its process exists, is not a zombie (pid 1 here may reap late) and is an sshd.
pid_alive() {
	local pid
	pid="$(cat "$1" 2>/dev/null)" && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
	[ "$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)" != Z ] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep sshd >/dev/null
}

start_sshd() { # $1 = port
	local port="$1" hk="$STATE/ssh_host_ed25519_key_$1" cfg="$STATE/sshd_config_$1"
	local pidf="$STATE/sshd-$1.pid" logf="$STATE/sshd-$1.log" changed=0
	if [ ! -s "$hk" ] || [ ! -s "$hk.pub" ]; then
		changed=1
		rm -f "$hk" "$hk.pub"
		ssh-keygen -q -t ed25519 -N '' -C "sandboxer-harness-host-$port" -f "$hk" >/dev/null
	fi
	chmod 600 "$hk"
	cat >"$cfg.new" <<-EOF
	# Generated by scripts/harness/up.sh
	ListenAddress 127.0.0.1:$port
	HostKey $hk
	PidFile $pidf
	AuthorizedKeysFile $STATE/authorized_keys .ssh/authorized_keys
	PermitRootLogin prohibit-password
	PubkeyAuthentication yes
	PasswordAuthentication no
	KbdInteractiveAuthentication no
	UsePAM no
	StrictModes no
	LogLevel INFO
	Subsystem sftp $SFTP_SERVER
	EOF
	/usr/sbin/sshd -t -f "$cfg.new" || die "invalid sshd config $cfg.new"
	cmp -s "$cfg.new" "$cfg" || changed=1
	mv -f "$cfg.new" "$cfg"
	if pid_alive "$pidf"; then
		[ "$changed" = 0 ] && return 0
		kill "$(cat "$pidf")" 2>/dev/null || true
		for _ in $(seq 1 50); do pid_alive "$pidf" || break; sleep 0.1; done
	fi
	rm -f "$pidf"
	/usr/sbin/sshd -f "$cfg" -E "$logf" || die "sshd on port $port failed to start; see $logf"
	for _ in $(seq 1 50); do pid_alive "$pidf" && return 0; sleep 0.1; done
	echo "up.sh: ERROR: sshd on port $port did not write $pidf; last lines of $logf:" >&2
	tail -n 20 "$logf" >&2
	exit 1
}

# A non-root user in the docker group, as on users' build hosts: its sandboxes
# live under its home. sshd reads authorized keys as the user, so its key goes
# into its own ~/.ssh (the state dir under /root is not readable to it).
if ! id "$NONROOT_USER" >/dev/null 2>&1; then
	useradd --create-home --shell /bin/sh --groups docker "$NONROOT_USER" || die "useradd $NONROOT_USER failed"
fi
# A "!" password field locks the account for sshd (UsePAM no); "*" only disables passwords.
usermod -p '*' "$NONROOT_USER"
id -nG "$NONROOT_USER" | tr ' ' '\n' | grep -x docker >/dev/null || usermod -aG docker "$NONROOT_USER"
NONROOT_HOME="$(getent passwd "$NONROOT_USER" | cut -d: -f6)"
install -d -m 700 -o "$NONROOT_USER" -g "$NONROOT_USER" "$NONROOT_HOME/.ssh"
install -m 600 -o "$NONROOT_USER" -g "$NONROOT_USER" "$CLIENT_KEY.pub" "$NONROOT_HOME/.ssh/authorized_keys"

KNOWN_HOSTS="$STATE/known_hosts"
: >"$KNOWN_HOSTS.new"
for port in "$PORT1" "$PORT2"; do
	start_sshd "$port"
	# "[127.0.0.1]:PORT ssh-ed25519 AAAA..." (drop the key comment)
	hostline="[127.0.0.1]:$port $(cut -d' ' -f1-2 "$STATE/ssh_host_ed25519_key_$port.pub")"
	echo "$hostline" >>"$KNOWN_HOSTS.new"
	cut -d' ' -f1-2 "$STATE/ssh_host_ed25519_key_$port.pub" >"$STATE/host_key_$port.pub"
done
mv -f "$KNOWN_HOSTS.new" "$KNOWN_HOSTS"

for port in "$PORT1" "$PORT2"; do
	ok=0
	for _ in $(seq 1 20); do
		if ssh -n -i "$CLIENT_KEY" -o IdentitiesOnly=yes -o BatchMode=yes \
			-o UserKnownHostsFile="$KNOWN_HOSTS" -o GlobalKnownHostsFile=/dev/null \
			-o StrictHostKeyChecking=yes -o ConnectTimeout=5 -o LogLevel=ERROR \
			-p "$port" root@127.0.0.1 true 2>"$STATE/ssh-check-$port.err"; then
			ok=1
			break
		fi
		sleep 0.25
	done
	if [ "$ok" != 1 ]; then
		echo "up.sh: ERROR: ssh root@127.0.0.1:$port check failed:" >&2
		cat "$STATE/ssh-check-$port.err" >&2
		tail -n 10 "$STATE/sshd-$port.log" >&2
		exit 1
	fi
	rm -f "$STATE/ssh-check-$port.err"
done
out="$(ssh -n -i "$CLIENT_KEY" -o IdentitiesOnly=yes -o BatchMode=yes \
	-o UserKnownHostsFile="$KNOWN_HOSTS" -o GlobalKnownHostsFile=/dev/null \
	-o StrictHostKeyChecking=yes -o ConnectTimeout=5 -o LogLevel=ERROR \
	-p "$PORT1" "$NONROOT_USER@127.0.0.1" 'id -u; docker info --format "{{.ServerVersion}}"' 2>&1)" ||
	die "ssh $NONROOT_USER@127.0.0.1:$PORT1 with docker failed: $out"
[ "$(echo "$out" | sed -n 1p)" != 0 ] || die "$NONROOT_USER logs in as uid 0"

# ------------------------------------------------------------------ env
{
	printf 'export SANDBOXER_TEST_SSH_ADDR=%q\n' "127.0.0.1:$PORT1"
	printf 'export SANDBOXER_TEST_SSH_ADDR2=%q\n' "127.0.0.1:$PORT2"
	printf 'export SANDBOXER_TEST_SSH_USER=%q\n' root
	printf 'export SANDBOXER_TEST_SSH_NONROOT_USER=%q\n' "$NONROOT_USER"
	printf 'export SANDBOXER_TEST_SSH_KEY=%q\n' "$CLIENT_KEY"
	printf 'export SANDBOXER_TEST_KNOWN_HOSTS=%q\n' "$KNOWN_HOSTS"
	printf 'export SANDBOXER_TEST_HOST_KEY=%q\n' "$STATE/host_key_$PORT1.pub"
	printf 'export SANDBOXER_TEST_SSHD_LOG=%q\n' "$STATE/sshd-$PORT1.log"
	printf 'export SANDBOXER_TEST_SSHD_LOG2=%q\n' "$STATE/sshd-$PORT2.log"
	printf 'export SANDBOXER_TEST_IMAGE=%q\n' "$IMAGE"
	printf 'export SANDBOXER_TEST_PG_IMAGE=%q\n' "$PG_IMAGE"
} >"$STATE/env.new"
mv -f "$STATE/env.new" "$STATE/env"
echo "$STATE/env"
