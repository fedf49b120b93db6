#!/usr/bin/env bash
# test-upgrade.sh: what a released provider made, upgraded to the provider
# of this working tree, plans empty and stays as it is on the host.
#
#   bash scripts/test-upgrade.sh /path/to/terraform [/path/to/tofu ...]
#
# The releases are scripts/upgrade/releases ("<version> <commit>" lines):
# the newest by default; SANDBOXER_UPGRADE_FROM=all starts from each of
# them, SANDBOXER_UPGRADE_FROM="0.2.0 ..." from those. For each release and
# each CLI (default: the terraform scripts/harness/tools.sh finds):
#
# 1. both providers are installed as from a registry, by init, from a
#    filesystem_mirror the CLI config names (no dev_overrides, nothing
#    downloaded; registry.terraform.io and registry.opentofu.org): the
#    release built from this clone's own history (`git archive <commit>`;
#    the Go module cache makes it quick) as <version>, and this working
#    tree as the version of CHANGELOG.md's top section (the release's patch
#    + 1 when that is not newer: init takes a prerelease only when
#    constrained to it exactly)
# 2. with the release (`version = "<release>"`): init and apply a compose
#    sandbox on the harness host (busybox httpd publishing host port 18081,
#    and a plain service with a named volume), a snapshot of it, a restore
#    into a new sandbox (its own compose file, port 18082) and a
#    profile.workspace sandbox on host local
# 3. records what is on the host: the sandboxes' containers (id, start
#    time, restarts, ports), networks and volumes, and every file under
#    both root directories (type, mode, size, mtime, sha256)
# 4. with this tree's build (`version = "<new>"`): init -upgrade, then
#    `plan -detailed-exitcode` must be empty, with -refresh=false (the
#    release's state as this build upgrades it) and with a refresh, and
#    the host as recorded; apply (nothing to do) stores what the refresh
#    read, the host still as recorded: the state keeps every value the
#    release wrote and has what the release could not say (endpoints,
#    services' ports, read from the host); both ports still serve; a
#    second plan is empty
# 5. destroy with this tree's build leaves no record, workspace, snapshot,
#    container, network or volume
#
# The harness values come from the environment or from the file
# scripts/harness/up.sh writes ($SANDBOXER_HARNESS_DIR/env, by default
# ~/.cache/sandboxer-harness/env); the harness host is this machine (its
# docker is asked directly). Host ports 18081 and 18082 must be free.
set -euo pipefail

die() { echo "test-upgrade.sh: ERROR: $*" >&2; exit 1; }
log() { echo "test-upgrade.sh: $*" >&2; }

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RELEASES="$REPO_ROOT/scripts/upgrade/releases"
SOURCE="sand-boxer/sandboxer"
REGISTRIES=(registry.terraform.io registry.opentofu.org)
started=$SECONDS

# ------------------------------------------------------------------ CLIs
clis=()
if [ $# -eq 0 ]; then
	tools_out="$(bash "$REPO_ROOT/scripts/harness/tools.sh" terraform)"
	clis+=("$(printf '%s\n' "$tools_out" | sed -n 's/^TF_ACC_TERRAFORM_PATH=//p')")
fi
for c in "$@"; do
	if [[ "$c" != */* ]]; then
		c="$(command -v -- "$c")" || die "$c: not found on PATH"
	fi
	clis+=("$(cd "$(dirname "$c")" && pwd)/$(basename "$c")")
done
for c in "${clis[@]}"; do
	[ -x "$c" ] || die "$c: not an executable file"
done

# ------------------------------------------------------------ harness values
if [ -z "${SANDBOXER_TEST_SSH_ADDR:-}" ]; then
	env_file="${SANDBOXER_HARNESS_DIR:-$HOME/.cache/sandboxer-harness}/env"
	[ -r "$env_file" ] || die "harness not up: run bash scripts/harness/up.sh"
	# shellcheck disable=SC1090
	. "$env_file"
fi
for v in SANDBOXER_TEST_SSH_ADDR SANDBOXER_TEST_SSH_USER SANDBOXER_TEST_SSH_KEY SANDBOXER_TEST_KNOWN_HOSTS SANDBOXER_TEST_IMAGE; do
	[ -n "${!v:-}" ] || die "$v is not set (nor in the harness env file)"
done
docker info >/dev/null 2>&1 || die "docker is not reachable from here (the harness host is this machine)"

# ------------------------------------------------------------------ versions
# ver_gt A B: version A is newer than B.
ver_gt() { [ "$1" != "$2" ] && [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | tail -n1)" = "$1" ]; }

mapfile -t releases < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$RELEASES")
[ "${#releases[@]}" -gt 0 ] || die "no release in $RELEASES"
from=()
case "${SANDBOXER_UPGRADE_FROM:-}" in
"") from=("${releases[${#releases[@]} - 1]}") ;;
all) from=("${releases[@]}") ;;
*)
	for v in $SANDBOXER_UPGRADE_FROM; do
		line="$(printf '%s\n' "${releases[@]}" | awk -v v="$v" '$1 == v')"
		[ -n "$line" ] || die "release $v is not in $RELEASES"
		from+=("$line")
	done
	;;
esac
newest=""
for line in "${from[@]}"; do
	v="${line%% *}"
	if [ -z "$newest" ] || ver_gt "$v" "$newest"; then newest="$v"; fi
done
new="$(sed -n 's/^## \([0-9][0-9]*\.[0-9][0-9]*\.[0-9][0-9]*\)\([ ].*\)\{0,1\}$/\1/p' "$REPO_ROOT/CHANGELOG.md" | sed -n 1p)"
if [ -z "$new" ] || ! ver_gt "$new" "$newest"; then
	new="${newest%.*}.$((${newest##*.} + 1))"
fi

# --------------------------------------------------------------- scratch dir
TMP="$(mktemp -d "${TMPDIR:-/tmp}/sandboxer-upgrade.XXXXXX")"
applied=() # "cli|work dir|XDG_DATA_HOME|root dir" of each run not destroyed yet

# teardown destroys what a failed run left, with the provider its working
# directory has (the release's or this tree's); then, whatever that did,
# removes by compose project what the records name.
teardown() {
	local a cli work xdg root f id p
	for a in ${applied[@]+"${applied[@]}"}; do
		[ -n "$a" ] || continue
		IFS='|' read -r cli work xdg root <<<"$a"
		log "destroying what $work applied"
		XDG_DATA_HOME="$xdg" "$cli" -chdir="$work" destroy -auto-approve -no-color >"$work/../teardown.log" 2>&1 ||
			log "destroy failed (log: $(tail -n 5 "$work/../teardown.log"))"
		for f in "$root"/.sandboxer/sandboxes/*.json; do
			[ -e "$f" ] || continue
			id="$(basename "$f" .json)"
			p="label=com.docker.compose.project=sbx-$id"
			docker ps -aq --filter "$p" | xargs -r docker rm -f >/dev/null 2>&1 || true
			docker network ls -q --filter "$p" | xargs -r docker network rm >/dev/null 2>&1 || true
			docker volume ls -q --filter "$p" | xargs -r docker volume rm >/dev/null 2>&1 || true
		done
	done
}
cleanup() {
	local rc=$?
	trap - EXIT
	teardown
	rm -rf -- "$TMP"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ------------------------------------------------------- providers, mirror
export GOWORK=off
mirror="$TMP/mirror"
platform="$(go env GOOS)_$(go env GOARCH)"

# mirror_put VERSION BINARY: the unpacked layout, for both CLIs' registries.
mirror_put() {
	local reg dir
	for reg in "${REGISTRIES[@]}"; do
		dir="$mirror/$reg/$SOURCE/$1/$platform"
		mkdir -p "$dir"
		ln -f "$2" "$dir/terraform-provider-sandboxer_v$1"
	done
}

# build DIR VERSION: builds the provider in DIR as VERSION into $TMP/bin
# (with the build flags of the tests before, so the build cache has the
# dependencies compiled already).
build() {
	mkdir -p "$TMP/bin"
	(cd "$1" && go build -ldflags "-X main.version=$2" -o "$TMP/bin/terraform-provider-sandboxer_v$2" .) ||
		die "building $2 in $1 failed"
	mirror_put "$2" "$TMP/bin/terraform-provider-sandboxer_v$2"
}

for line in "${from[@]}"; do
	read -r v sha <<<"$line"
	git -C "$REPO_ROOT" cat-file -e "$sha^{commit}" 2>/dev/null ||
		die "commit $sha of release $v is not in this clone (a shallow clone? git fetch --unshallow)"
done
log "building this working tree as $new"
build "$REPO_ROOT" "$new"
for line in "${from[@]}"; do
	read -r v sha <<<"$line"
	log "building release $v from commit $sha"
	mkdir -p "$TMP/src-$v"
	git -C "$REPO_ROOT" archive "$sha" | tar -x -C "$TMP/src-$v"
	build "$TMP/src-$v" "$v"
done

cat >"$TMP/cli.tfrc" <<EOF
provider_installation {
  filesystem_mirror {
    path    = "$mirror"
    include = ["${REGISTRIES[0]}/$SOURCE", "${REGISTRIES[1]}/$SOURCE"]
  }
}
EOF
# Only this config (OpenTofu prefers TOFU_CLI_CONFIG_FILE when set), and
# no plugin cache: init installs from the mirror.
export TF_CLI_CONFIG_FILE="$TMP/cli.tfrc" TOFU_CLI_CONFIG_FILE="$TMP/cli.tfrc"
export CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1
unset TF_PLUGIN_CACHE_DIR TF_DATA_DIR TF_WORKSPACE TF_CLI_ARGS TF_CLI_ARGS_init TF_CLI_ARGS_plan \
	TF_CLI_ARGS_apply TF_CLI_ARGS_destroy SANDBOXER_HOST SANDBOXER_AGENT_DIR

# ------------------------------------------------------------ the scenario
# compose_file PORT: a web server publishing PORT as written, serving
# ./www, and a plain service with a named volume.
compose_file() {
	cat <<-EOF
	services:
	  web:
	    image: $SANDBOXER_TEST_IMAGE
	    ports: ["$1:80"]
	    volumes: ["./www:/www:ro"]
	    command: ["httpd", "-f", "-p", "80", "-h", "/www"]
	  worker:
	    image: $SANDBOXER_TEST_IMAGE
	    volumes: ["data:/data"]
	    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
	volumes:
	  data: {}
	EOF
}

# main_tf VERSION ROOT: the configuration, for provider VERSION. The
# snapshot leaves the compose file out, so the restored sandbox keeps its
# own (port 18082) and gets the stack's www/.
main_tf() {
	cat <<-EOF
	terraform {
	  required_providers {
	    sandboxer = { source = "$SOURCE", version = "$1" }
	  }
	}

	provider "sandboxer" {
	  host {
	    name             = "harness"
	    address          = "$SANDBOXER_TEST_SSH_ADDR"
	    user             = "$SANDBOXER_TEST_SSH_USER"
	    private_key_file = "$SANDBOXER_TEST_SSH_KEY"
	    known_hosts_file = "$SANDBOXER_TEST_KNOWN_HOSTS"
	    root_dir         = "$2"
	  }
	}

	resource "sandboxer_sandbox" "stack" {
	  profile = "profile.compose-e2e"
	  host    = "harness"
	  inputs  = { repo = abspath("\${path.module}/app") }
	  labels  = { test = "upgrade" }
	}

	resource "sandboxer_snapshot" "stack" {
	  sandbox_id    = sandboxer_sandbox.stack.id
	  name          = "before-upgrade"
	  exclude_paths = ["docker-compose.yml"]
	}

	resource "sandboxer_restore" "copy" {
	  snapshot_id = sandboxer_snapshot.stack.id
	  inputs      = { repo = abspath("\${path.module}/copy") }
	}

	resource "sandboxer_sandbox" "scratch" {
	  profile = "profile.workspace"
	  host    = "local"
	  ttl     = "90m"
	}
	EOF
}

# host_view ROOT...: what is on the host for the sandboxes recorded in the
# root directories: each compose project's containers, networks and
# volumes, and every file with its mode, size, mtime and content hash.
host_view() {
	local r f id p
	for r in "$@"; do
		for f in "$r"/.sandboxer/sandboxes/*.json; do
			[ -e "$f" ] || continue
			id="$(basename "$f" .json)"
			p="label=com.docker.compose.project=sbx-$id"
			echo "== project sbx-$id"
			docker ps -aq --filter "$p" | xargs -r docker inspect -f \
				'container {{.Name}} {{.Id}} {{.State.Status}} started={{.State.StartedAt}} restarts={{.RestartCount}} ports={{json .NetworkSettings.Ports}}' | sort
			docker network ls -q --filter "$p" | xargs -r docker network inspect -f \
				'network {{.Name}} {{.Id}}{{range .IPAM.Config}} {{.Subnet}}{{end}}' | sort
			docker volume ls -q --filter "$p" | sed 's/^/volume /' | sort
		done
	done
	echo "== files"
	find "$@" -printf '%p %y %m %s %T@ %l\n' | sort
	find "$@" -type f -exec sha256sum {} + | sort -k2
}

# fetch PORT: the body of what the harness host serves at / on PORT (bash
# alone: no HTTP client to depend on).
fetch() {
	local response
	response="$(exec 3<>"/dev/tcp/127.0.0.1/$1" && printf 'GET / HTTP/1.0\r\n\r\n' >&3 && timeout 10 cat <&3)" || return 0
	printf '%s\n' "${response##*$'\r\n\r\n'}"
}

# show_lines FILE: the lines of `show` output as a sorted set, indentation
# and alignment dropped (a longer attribute name added realigns a block).
show_lines() { sed -e 's/^ *//' -e 's/ *= */ = /' "$1" | sort -u; }

# upgrade_run CLI RELEASE: the scenario with one CLI, from one release.
upgrade_run() {
	local cli="$1" old="$2" n="${#applied[@]}" t0=$SECONDS run work root xdg name
	run="$TMP/run-$old-$(basename "$cli")"
	work="$run/work" root="$run/root" xdg="$run/xdg"
	mkdir -p "$work/app/www" "$work/copy/www" "$root" "$xdg/sandboxer"
	compose_file 18081 >"$work/app/docker-compose.yml"
	compose_file 18082 >"$work/copy/docker-compose.yml"
	echo "upgrade-stack" >"$work/app/www/index.html"
	echo "upgrade-copy" >"$work/copy/www/index.html"
	name="$("$cli" version | sed -n 1p)"
	log "== $name: from $old to $new"

	# tf STEP ARGS...: runs the CLI in the working directory, its output in
	# $run/STEP.log, shown when it fails; returns its exit status.
	tf() {
		local step="$1"
		shift
		XDG_DATA_HOME="$xdg" "$cli" -chdir="$work" "$@" -no-color >"$run/$step.log" 2>&1
	}
	must() {
		tf "$@" || { cat "$run/$1.log" >&2; die "$name: ${*:2} failed (from $old to $new)"; }
	}
	# empty_plan STEP OPTIONS...: a plan that must have nothing to do.
	empty_plan() {
		local step="$1" rc=0
		shift
		tf "$step" plan -input=false -detailed-exitcode "$@" || rc=$?
		[ "$rc" = 0 ] && return 0
		cat "$run/$step.log" >&2
		[ "$rc" = 2 ] && die "$name: plan $* after the upgrade from $old to $new is not empty"
		die "$name: plan $* after the upgrade from $old to $new failed"
	}

	main_tf "$old" "$root" >"$work/main.tf"
	must init-old init -input=false
	grep -q "version *= \"$old\"" "$work/.terraform.lock.hcl" || die "init did not install $old: $(cat "$work/.terraform.lock.hcl")"
	applied+=("$cli|$work|$xdg|$root")
	must apply-old apply -auto-approve -input=false
	[ "$(fetch 18081)" = upgrade-stack ] || die "port 18081 does not serve the stack"
	[ "$(fetch 18082)" = upgrade-stack ] || die "port 18082 does not serve the restored www/"
	[ "$(find "$root/.sandboxer/sandboxes" "$xdg/sandboxer/.sandboxer/sandboxes" -name '*.json' | wc -l)" = 3 ] ||
		die "$old did not leave 3 sandbox records"
	host_view "$root" "$xdg/sandboxer" >"$run/host-before"
	if ! grep -q '^container .*18081' "$run/host-before" || ! grep -q '^container .*18082' "$run/host-before"; then
		die "no container publishes 18081 and 18082: $(cat "$run/host-before")"
	fi
	must show-old show

	# This tree's build: init -upgrade, and the plan is empty.
	main_tf "$new" "$root" >"$work/main.tf"
	must init-new init -input=false -upgrade
	grep -q "version *= \"$new\"" "$work/.terraform.lock.hcl" || die "init -upgrade did not install $new: $(cat "$work/.terraform.lock.hcl")"
	# Without a refresh (-refresh=false) the plan compares the configuration
	# with the release's state as this build upgrades it; with one, with
	# what this build reads from the host.
	empty_plan plan-norefresh -refresh=false
	empty_plan plan-new
	host_view "$root" "$xdg/sandboxer" >"$run/host-after-plan"
	diff -u "$run/host-before" "$run/host-after-plan" >&2 || die "$name: the plan after the upgrade changed the host (above)"

	# Apply, with nothing to do, stores the refresh; the host stays.
	must apply-new apply -auto-approve -input=false
	grep -q 'Resources: 0 added, 0 changed, 0 destroyed' "$run/apply-new.log" ||
		{ cat "$run/apply-new.log" >&2; die "$name: the apply after the upgrade did something"; }
	host_view "$root" "$xdg/sandboxer" >"$run/host-after-apply"
	diff -u "$run/host-before" "$run/host-after-apply" >&2 || die "$name: the apply after the upgrade changed the host (above)"
	# The state keeps every value the release wrote (the refresh read the
	# same from the release's host records), and has what the release did
	# not: where the published ports are.
	must show-new show
	comm -23 <(show_lines "$run/show-old.log") <(show_lines "$run/show-new.log") >"$run/show-lost"
	[ ! -s "$run/show-lost" ] || { cat "$run/show-new.log" >&2; die "$name: values of the release's state changed or went: $(cat "$run/show-lost")"; }
	must state-stack state show sandboxer_sandbox.stack
	must state-copy state show sandboxer_restore.copy
	grep -q '"web:80" *= *"127.0.0.1:18081"' "$run/state-stack.log" ||
		{ cat "$run/state-stack.log" >&2; die "$name: the stack's endpoints were not read from the host"; }
	grep -q 'published *= *18081' "$run/state-stack.log" ||
		{ cat "$run/state-stack.log" >&2; die "$name: the stack's services[*].ports were not read from the host"; }
	grep -q '"web:80" *= *"127.0.0.1:18082"' "$run/state-copy.log" ||
		{ cat "$run/state-copy.log" >&2; die "$name: the restored sandbox's endpoints were not read from the host"; }
	if [ "$(fetch 18081)" != upgrade-stack ] || [ "$(fetch 18082)" != upgrade-stack ]; then
		die "$name: a published port stopped serving after the upgrade"
	fi
	empty_plan plan-again

	# Destroy with this tree's build: nothing of it is left.
	local projects
	projects="$(sed -n 's/^== project //p' "$run/host-before")"
	must destroy-new destroy -auto-approve -input=false
	applied[n]=""
	local left p
	left="$(find "$root" "$xdg/sandboxer" -mindepth 1 -maxdepth 1 ! -name .sandboxer
		find "$root/.sandboxer" "$xdg/sandboxer/.sandboxer" \( -path '*/sandboxes/*' -o -path '*/store/snapshots/*' -o -path '*/networks/*' \) -type f)"
	for p in $projects; do
		left+="$(docker ps -aq --filter "label=com.docker.compose.project=$p" | sed "s/^/ container of $p: /")"
		left+="$(docker network ls -q --filter "label=com.docker.compose.project=$p" | sed "s/^/ network of $p: /")"
		left+="$(docker volume ls -q --filter "label=com.docker.compose.project=$p" | sed "s/^/ volume of $p: /")"
	done
	[ -z "$left" ] || die "$name: destroy left: $left"
	log "PASS: $name, from $old to $new: init -upgrade, an empty plan, the host untouched, destroyed clean ($((SECONDS - t0)) s)"
}

for line in "${from[@]}"; do
	for cli in "${clis[@]}"; do
		upgrade_run "$cli" "${line%% *}"
	done
done
log "PASS: every upgrade (${#from[@]} release(s), ${#clis[@]} CLI(s)) in $((SECONDS - started)) s"
