# shellcheck shell=bash
# Sourced, not run: Shopify's toxiproxy v2.5.0, a TCP proxy whose toxics
# add latency (and other faults) to what passes through it. The kernel of
# many CI machines has no sch_netem, so a network's latency is made in user
# space, one latency toxic per direction.
#
#   toxiproxy_server            prints the server's path, building it once
#                               (go install through the module proxy) into
#                               ~/.cache/sandboxer-tools/toxiproxy-2.5.0
#   toxiproxy_start API_PORT    starts a server with its API on
#                               127.0.0.1:API_PORT, stopped on exit
#                               (devprovider_on_exit: devprovider.sh first)
#   toxiproxy_proxy NAME LISTEN UPSTREAM
#                               a proxy from LISTEN to UPSTREAM (host:port)
#   toxiproxy_rtt NAME MS       a round trip of MS milliseconds through NAME:
#                               MS/2 added each way (0 removes both)

TOXIPROXY_VERSION=2.5.0
TOXIPROXY_API=""

toxiproxy_server() {
	local dir="${SANDBOXER_TOOLS_DIR:-$HOME/.cache/sandboxer-tools}/toxiproxy-$TOXIPROXY_VERSION"
	if [ ! -x "$dir/server" ]; then
		echo "Building toxiproxy v$TOXIPROXY_VERSION into $dir ..." >&2
		mkdir -p "$dir"
		(cd / && GOBIN="$dir" GOFLAGS= go install "github.com/Shopify/toxiproxy/v2/cmd/server@v$TOXIPROXY_VERSION") >&2
	fi
	printf '%s\n' "$dir/server"
}

toxiproxy_start() { # API_PORT
	local server log i
	server="$(toxiproxy_server)"
	log="$(mktemp /tmp/sandboxer-toxiproxy.XXXXXX.log)"
	TOXIPROXY_API="http://127.0.0.1:$1"
	"$server" -host 127.0.0.1 -port "$1" >"$log" 2>&1 &
	devprovider_on_exit "kill $! 2>/dev/null || true; rm -f $log"
	for i in $(seq 1 100); do
		curl -fsS "$TOXIPROXY_API/version" >/dev/null 2>&1 && return 0
		[ "$i" = 100 ] || sleep 0.1
	done
	tail -n 20 "$log" >&2
	echo "toxiproxy did not answer on $TOXIPROXY_API" >&2
	return 1
}

toxiproxy_api() { # METHOD PATH [JSON]
	curl -fsS -X "$1" -H 'Content-Type: application/json' ${3:+--data "$3"} "$TOXIPROXY_API$2" >/dev/null
}

toxiproxy_proxy() { # NAME LISTEN UPSTREAM
	toxiproxy_api POST /proxies "{\"name\":\"$1\",\"listen\":\"$2\",\"upstream\":\"$3\",\"enabled\":true}"
}

toxiproxy_rtt() { # NAME MS
	local way
	for way in upstream downstream; do
		curl -fsS -X DELETE "$TOXIPROXY_API/proxies/$1/toxics/rtt-$way" >/dev/null 2>&1 || true
		[ "$2" = 0 ] || toxiproxy_api POST "/proxies/$1/toxics" \
			"{\"name\":\"rtt-$way\",\"type\":\"latency\",\"stream\":\"$way\",\"attributes\":{\"latency\":$(($2 / 2)),\"jitter\":0}}"
	done
}
