#!/usr/bin/env bash
# Ensures the CLIs the tests drive exist, building what is missing from source
# through the Go module proxy into a cache dir (~/.cache/sandboxer-tools):
#
#   tools.sh terraform   a Terraform CLI only (what `make demo` needs)
#   tools.sh [all]       Terraform, OpenTofu, docker compose v2 installed as
#                        the CLI plugin /usr/local/lib/docker/cli-plugins/docker-compose,
#                        golangci-lint v2 (the linter `make test-all` runs),
#                        goreleaser v2 (release builds: scripts/test-release.sh)
#                        and actionlint (checks .github/workflows)
#
# Terraform: $TERRAFORM when set, else the one on PATH when >= 1.11, else built.
# OpenTofu: the newest release the proxy serves (probed, not only listed), or
# $SANDBOXER_TOFU_VERSION. Compose: v$SANDBOXER_COMPOSE_VERSION (2.40.3).
# goreleaser: v$SANDBOXER_GORELEASER_VERSION (2.15.1, what the release workflow
# runs); actionlint: v$SANDBOXER_ACTIONLINT_VERSION (1.7.12).
#
# stdout: one NAME=<abs path> line per tool (TF_ACC_TERRAFORM_PATH,
# SANDBOXER_TOFU_PATH, SANDBOXER_COMPOSE_V2, SANDBOXER_GOLANGCI_LINT,
# SANDBOXER_GORELEASER, SANDBOXER_ACTIONLINT); progress and errors go to stderr.
# The whole run holds a lock on the cache, so concurrent runs (two `make
# test-all`, or `make demo` beside one) wait for each other's builds instead of
# racing; a failed build exits non-zero with the tail of its log.
set -euo pipefail

MODE="${1:-all}"
case "$MODE" in terraform | all) ;; *) echo "usage: tools.sh [terraform|all]" >&2; exit 2 ;; esac

TOOLS_DIR="${SANDBOXER_TOOLS_DIR:-$HOME/.cache/sandboxer-tools}"
TF_BUILD_VERSION="${SANDBOXER_TF_VERSION:-1.11.4}"
TF_MIN="1.11.0"
# Newest releases known to be served; newer ones are probed first.
TOFU_KNOWN="1.12.6"
COMPOSE_VERSION="${SANDBOXER_COMPOSE_VERSION:-2.40.3}"
PLUGIN_DIR="${SANDBOXER_COMPOSE_PLUGIN_DIR:-/usr/local/lib/docker/cli-plugins}"

log() { echo "tools.sh: $*" >&2; }
die() { echo "tools.sh: ERROR: $*" >&2; exit 1; }

command -v go >/dev/null 2>&1 || die "go is not on PATH"
command -v flock >/dev/null 2>&1 || die "flock (util-linux) is not on PATH"
export GOWORK=off GOFLAGS="${GOFLAGS:-}"

mkdir -p "$TOOLS_DIR"
exec 9>"$TOOLS_DIR/.lock"
if ! flock -n 9; then
	log "another run holds $TOOLS_DIR/.lock; waiting for it"
	flock 9
fi

# ver_ge A B: true when version A >= version B.
ver_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | sed -n 1p)" = "$2" ]; }

# tf_version BIN: prints the Terraform version a binary reports (empty if it fails).
tf_version() {
	"$1" version -json 2>/dev/null | sed -n 's/.*"terraform_version": *"\([^"]*\)".*/\1/p' | sed -n 1p || true
}

abspath() { (cd "$(dirname "$1")" && echo "$PWD/$(basename "$1")"); }

# served MODULE VERSION: the proxy serves exactly this version.
served() { (cd / && go mod download -json "$1@v$2" >/dev/null 2>&1); }

# wrapper_build DIR MODULE VERSION PKG OUT LDFLAGS [go mod edit args...]: builds PKG
# of MODULE@VERSION from a throwaway main module (replace and exclude lines only
# apply in the main module, so the caller repeats them as edit args).
wrapper_build() {
	local work="$1" mod="$2" ver="$3" pkg="$4" out="$5" ldflags="$6"
	shift 6
	mkdir -p "$work"
	cd "$work"
	go mod init sandboxer.local/toolbuild >/dev/null 2>&1
	printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$pkg" >tools.go
	go mod edit -require="$mod@v$ver" "$@"
	go mod tidy
	go build -trimpath -ldflags "$ldflags" -o "$out.tmp.$$" "$pkg"
	mv -f "$out.tmp.$$" "$out"
}

# gomod_of MODULE VERSION: path of the module's go.mod in the module cache.
gomod_of() {
	(cd / && go mod download -json "$1@v$2") | sed -n 's/.*"GoMod": *"\([^"]*\)".*/\1/p'
}

# ---------------------------------------------------------------- Terraform
TF_PATH="" TF_BUILD_DIR=""
if [ -n "${TERRAFORM:-}" ]; then
	[ -x "$TERRAFORM" ] || TERRAFORM="$(command -v "$TERRAFORM" || true)"
	if [ -z "$TERRAFORM" ] || [ ! -x "$TERRAFORM" ]; then die "\$TERRAFORM is set but not executable"; fi
	[ -n "$(tf_version "$TERRAFORM")" ] || die "\$TERRAFORM ($TERRAFORM) does not run 'version'"
	TF_PATH="$(abspath "$TERRAFORM")"
elif p="$(command -v terraform 2>/dev/null)" && v="$(tf_version "$p")" && [ -n "$v" ] && ver_ge "$v" "$TF_MIN"; then
	TF_PATH="$(abspath "$p")"
else
	TF_BUILD_DIR="$TOOLS_DIR/terraform-$TF_BUILD_VERSION"
	if [ -x "$TF_BUILD_DIR/terraform" ] && [ "$(tf_version "$TF_BUILD_DIR/terraform")" = "$TF_BUILD_VERSION" ]; then
		TF_PATH="$TF_BUILD_DIR/terraform"
		TF_BUILD_DIR=""
	fi
fi

build_terraform() { # $1 = cache dir
	local dir="$1"
	mkdir -p "$dir"
	# version.dev=no as in upstream release builds, so it reports "v1.11.4", not "-dev".
	(cd / && GOBIN="$dir/gobin.$$" go install -ldflags "-s -w -X github.com/hashicorp/terraform/version.dev=no" \
		"github.com/hashicorp/terraform@v$TF_BUILD_VERSION")
	mv -f "$dir/gobin.$$/terraform" "$dir/terraform"
	rm -rf "$dir/gobin.$$"
}

# ---------------------------------------------------------------- OpenTofu
TOFU_VERSION="" TOFU_PATH="" TOFU_BUILD=0
if [ "$MODE" = all ]; then
	TOFU_VERSION="${SANDBOXER_TOFU_VERSION:-}"
	if [ -z "$TOFU_VERSION" ]; then
		# `go list -m -versions` misses some served versions: start from the newest
		# known one, take anything newer the list shows, then probe the next patches.
		TOFU_VERSION="$TOFU_KNOWN"
		listed="$( (cd / && go list -m -versions github.com/opentofu/opentofu 2>/dev/null) | tr ' ' '\n' |
			grep -E '^v[0-9]+\.[0-9]+\.[0-9]+$' | sed 's/^v//' | sort -V | tail -n1 || true)"
		if [ -n "$listed" ] && ver_ge "$listed" "$TOFU_VERSION"; then TOFU_VERSION="$listed"; fi
		cached="$(find "$TOOLS_DIR" -maxdepth 1 -name 'tofu-*' -printf '%f\n' 2>/dev/null | sed 's/^tofu-//' | sort -V | tail -n1)"
		if [ -n "$cached" ] && ver_ge "$cached" "$TOFU_VERSION" && [ -x "$TOOLS_DIR/tofu-$cached/tofu" ]; then
			TOFU_VERSION="$cached"
		else
			IFS=. read -r maj min pat <<<"$TOFU_VERSION"
			for cand in "$maj.$min.$((pat + 1))" "$maj.$((min + 1)).0" "$maj.$((min + 1)).1"; do
				if served github.com/opentofu/opentofu "$cand"; then TOFU_VERSION="$cand"; fi
			done
		fi
	fi
	TOFU_DIR="$TOOLS_DIR/tofu-$TOFU_VERSION"
	TOFU_PATH="$TOFU_DIR/tofu"
	tofu_ok() { [ -x "$TOFU_PATH" ] && "$TOFU_PATH" version 2>/dev/null | grep -x "OpenTofu v$TOFU_VERSION" >/dev/null; }
	tofu_ok || TOFU_BUILD=1
fi

build_tofu() { # $1 = cache dir, $2 = version
	local dir="$1" ver="$2" gomod rep
	gomod="$(gomod_of github.com/opentofu/opentofu "$ver")"
	[ -f "$gomod" ] || { echo "cannot fetch go.mod of opentofu v$ver" >&2; return 1; }
	# The hcl fork replace must be repeated. Handles "replace X v => Y v" and a
	# replace ( ... ) block; keeps the old version if given.
	rep="$(awk '
		/^replace[ \t]*\(/ { blk = 1; next }
		blk && /^\)/ { blk = 0; next }
		{ line = $0; if (!blk) { if (sub(/^replace[ \t]+/, "", line) == 0) next } }
		{ n = split(line, f, /[ \t]+/); if (f[1] == "") { for (i = 1; i < n; i++) f[i] = f[i + 1]; n-- } }
		f[1] == "github.com/hashicorp/hcl/v2" {
			if (f[2] == "=>") print f[1] "=" f[3] "@" f[4]; else print f[1] "@" f[2] "=" f[4] "@" f[5]
			exit
		}' "$gomod")"
	[ -n "$rep" ] || { echo "no hcl/v2 replace found in $gomod" >&2; return 1; }
	mkdir -p "$dir"
	wrapper_build "$dir/src" github.com/opentofu/opentofu "$ver" github.com/opentofu/opentofu/cmd/tofu \
		"$dir/tofu" "-s -w -X github.com/opentofu/opentofu/version.dev=no" -replace="$rep"
	rm -rf "$dir/src"
}

# ---------------------------------------------------------------- compose v2
COMPOSE_DIR="$TOOLS_DIR/compose-$COMPOSE_VERSION"
COMPOSE_BIN="$COMPOSE_DIR/docker-compose"
COMPOSE_BUILD=0
compose_ok() { [ -x "$1" ] && "$1" version 2>/dev/null | grep "v$COMPOSE_VERSION" >/dev/null; }
if [ "$MODE" = all ] && ! compose_ok "$COMPOSE_BIN"; then COMPOSE_BUILD=1; fi

build_compose() { # $1 = cache dir
	local dir="$1" gomod excl=()
	gomod="$(gomod_of github.com/docker/compose/v2 "$COMPOSE_VERSION")"
	[ -f "$gomod" ] || { echo "cannot fetch go.mod of compose v$COMPOSE_VERSION" >&2; return 1; }
	# `go install` refuses a module whose go.mod has exclude lines; repeat them here.
	while read -r m v; do excl+=("-exclude=$m@$v"); done < <(awk '
		/^exclude[ \t]*\(/ { blk = 1; next }
		blk && /^\)/ { blk = 0; next }
		blk && $1 !~ /^\/\// && NF >= 2 { print $1, $2 }
		/^exclude[ \t]+[^(]/ { print $2, $3 }' "$gomod")
	mkdir -p "$dir"
	wrapper_build "$dir/src" github.com/docker/compose/v2 "$COMPOSE_VERSION" github.com/docker/compose/v2/cmd \
		"$dir/docker-compose" "-s -w -X github.com/docker/compose/v2/internal.Version=v$COMPOSE_VERSION" "${excl[@]}"
	rm -rf "$dir/src"
}

# ---------------------------------------------------------------- golangci-lint
LINT_VERSION="${SANDBOXER_GOLANGCI_LINT_VERSION:-2.15.0}"
LINT_DIR="$TOOLS_DIR/golangci-lint-$LINT_VERSION"
LINT_BIN="$LINT_DIR/golangci-lint"
LINT_BUILD=0
lint_ok() { [ -x "$1" ] && "$1" version 2>/dev/null | grep "version $LINT_VERSION" >/dev/null; }
if [ "$MODE" = all ] && ! lint_ok "$LINT_BIN"; then LINT_BUILD=1; fi

build_lint() { # $1 = cache dir; its go.mod has no replace or exclude: go install takes it
	(cd / && GOBIN="$1" GOFLAGS= go install -ldflags "-s -w -X main.version=$LINT_VERSION" \
		"github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v$LINT_VERSION")
}

# ---------------------------------------------------------------- goreleaser, actionlint
# Plain `go install`: neither go.mod has replace or exclude lines.
GORELEASER_VERSION="${SANDBOXER_GORELEASER_VERSION:-2.15.1}"
GORELEASER_DIR="$TOOLS_DIR/goreleaser-$GORELEASER_VERSION"
GORELEASER_BIN="$GORELEASER_DIR/goreleaser"
GORELEASER_BUILD=0
goreleaser_ok() { [ -x "$1" ] && "$1" --version 2>/dev/null | grep -E "^GitVersion: +$GORELEASER_VERSION\$" >/dev/null; }
if [ "$MODE" = all ] && ! goreleaser_ok "$GORELEASER_BIN"; then GORELEASER_BUILD=1; fi

ACTIONLINT_VERSION="${SANDBOXER_ACTIONLINT_VERSION:-1.7.12}"
ACTIONLINT_DIR="$TOOLS_DIR/actionlint-$ACTIONLINT_VERSION"
ACTIONLINT_BIN="$ACTIONLINT_DIR/actionlint"
ACTIONLINT_BUILD=0
actionlint_ok() { [ -x "$1" ] && "$1" -version 2>/dev/null | sed -n 1p | grep -x "$ACTIONLINT_VERSION" >/dev/null; }
if [ "$MODE" = all ] && ! actionlint_ok "$ACTIONLINT_BIN"; then ACTIONLINT_BUILD=1; fi

build_go_install() { # $1 = cache dir, $2 = package@version, $3 = ldflags (the version it reports)
	(cd / && GOBIN="$1" GOFLAGS='' go install -ldflags "-s -w $3" "$2")
}

# ---------------------------------------------------------------- builds
pids=() names=() logs=()
start() { # NAME DIR FUNC ARGS...: runs a build in the background, logging into DIR/build.log
	local name="$1" dir="$2"
	shift 2
	mkdir -p "$dir"
	log "building $name into $dir (several minutes; log: $dir/build.log)"
	("$@") >"$dir/build.log" 2>&1 &
	pids+=("$!") names+=("$name") logs+=("$dir/build.log")
}
[ -z "$TF_BUILD_DIR" ] || start "Terraform v$TF_BUILD_VERSION" "$TF_BUILD_DIR" build_terraform "$TF_BUILD_DIR"
[ "$TOFU_BUILD" = 0 ] || start "OpenTofu v$TOFU_VERSION" "$TOFU_DIR" build_tofu "$TOFU_DIR" "$TOFU_VERSION"
[ "$COMPOSE_BUILD" = 0 ] || start "docker compose v$COMPOSE_VERSION" "$COMPOSE_DIR" build_compose "$COMPOSE_DIR"
[ "$LINT_BUILD" = 0 ] || start "golangci-lint v$LINT_VERSION" "$LINT_DIR" build_lint "$LINT_DIR"
[ "$GORELEASER_BUILD" = 0 ] || start "goreleaser v$GORELEASER_VERSION" "$GORELEASER_DIR" build_go_install "$GORELEASER_DIR" \
	"github.com/goreleaser/goreleaser/v2@v$GORELEASER_VERSION" "-X main.version=$GORELEASER_VERSION"
[ "$ACTIONLINT_BUILD" = 0 ] || start "actionlint v$ACTIONLINT_VERSION" "$ACTIONLINT_DIR" build_go_install "$ACTIONLINT_DIR" \
	"github.com/rhysd/actionlint/cmd/actionlint@v$ACTIONLINT_VERSION" "-X github.com/rhysd/actionlint.version=$ACTIONLINT_VERSION"
failed=0
for i in "${!pids[@]}"; do
	if wait "${pids[$i]}"; then
		log "${names[$i]} build done"
	else
		failed=1
		echo "tools.sh: ERROR: ${names[$i]} build failed; last lines of ${logs[$i]}:" >&2
		tail -n 20 "${logs[$i]}" >&2
	fi
done
[ "$failed" = 0 ] || exit 1

if [ -n "$TF_BUILD_DIR" ]; then TF_PATH="$TF_BUILD_DIR/terraform"; fi

# ---------------------------------------------------------------- verify, install
[ -n "$(tf_version "$TF_PATH")" ] || die "Terraform at $TF_PATH does not run 'version'"
echo "TF_ACC_TERRAFORM_PATH=$TF_PATH"
[ "$MODE" = all ] || exit 0

tofu_ok || die "OpenTofu at $TOFU_PATH does not run 'version' or does not report v$TOFU_VERSION"
echo "SANDBOXER_TOFU_PATH=$TOFU_PATH"

compose_ok "$COMPOSE_BIN" || die "compose at $COMPOSE_BIN does not report v$COMPOSE_VERSION"
# As a CLI plugin every user of the host sees it, as on users' docker hosts.
if ! cmp -s "$COMPOSE_BIN" "$PLUGIN_DIR/docker-compose"; then
	mkdir -p "$PLUGIN_DIR"
	install -m 0755 "$COMPOSE_BIN" "$PLUGIN_DIR/docker-compose.tmp.$$"
	mv -f "$PLUGIN_DIR/docker-compose.tmp.$$" "$PLUGIN_DIR/docker-compose"
fi
docker compose version 2>/dev/null | grep "v$COMPOSE_VERSION" >/dev/null ||
	die "'docker compose version' does not report v$COMPOSE_VERSION after installing $PLUGIN_DIR/docker-compose"
echo "SANDBOXER_COMPOSE_V2=$PLUGIN_DIR/docker-compose"

lint_ok "$LINT_BIN" || die "golangci-lint at $LINT_BIN does not report version $LINT_VERSION"
echo "SANDBOXER_GOLANGCI_LINT=$LINT_BIN"

goreleaser_ok "$GORELEASER_BIN" || die "goreleaser at $GORELEASER_BIN does not report version $GORELEASER_VERSION"
echo "SANDBOXER_GORELEASER=$GORELEASER_BIN"
actionlint_ok "$ACTIONLINT_BIN" || die "actionlint at $ACTIONLINT_BIN does not report version $ACTIONLINT_VERSION"
echo "SANDBOXER_ACTIONLINT=$ACTIONLINT_BIN"
