#!/usr/bin/env bash
# Ensures a Terraform (>= 1.8) and an OpenTofu 1.8.x CLI exist, building them
# from source through the Go module proxy into a cache dir when missing.
# stdout: exactly two lines, TF_ACC_TERRAFORM_PATH=<abs> and SANDBOXER_TOFU_PATH=<abs>;
# progress and errors go to stderr. Env: TERRAFORM, SANDBOXER_TOOLS_DIR, SANDBOXER_TOFU_VERSION.
set -euo pipefail

TOOLS_DIR="${SANDBOXER_TOOLS_DIR:-$HOME/.cache/sandboxer-tools}"
TF_BUILD_VERSION="${SANDBOXER_TF_VERSION:-1.8.5}"
TF_MIN="1.8.0"
TOFU_SERIES="1.8"

log() { echo "tools.sh: $*" >&2; }
die() { echo "tools.sh: ERROR: $*" >&2; exit 1; }

command -v go >/dev/null 2>&1 || die "go is not on PATH"
export GOWORK=off GOFLAGS="${GOFLAGS:-}"

# ver_ge A B: true when version A >= version B.
ver_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

# tf_version BIN: prints the Terraform version a binary reports (empty if it fails).
tf_version() {
	"$1" version -json 2>/dev/null | sed -n 's/.*"terraform_version": *"\([^"]*\)".*/\1/p' | head -n1 || true
}

abspath() { (cd "$(dirname "$1")" && echo "$PWD/$(basename "$1")"); }

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

# ---------------------------------------------------------------- OpenTofu
TOFU_VERSION="${SANDBOXER_TOFU_VERSION:-}"
if [ -z "$TOFU_VERSION" ]; then
	TOFU_VERSION="$( (cd / && go list -m -versions github.com/opentofu/opentofu 2>/dev/null) | tr ' ' '\n' |
		grep -E "^v${TOFU_SERIES//./\\.}\.[0-9]+$" | sort -V | tail -n1 | sed 's/^v//' || true)"
	if [ -z "$TOFU_VERSION" ]; then
		# Offline: fall back to the newest cached build of the series.
		# shellcheck disable=SC2012
		TOFU_VERSION="$(ls -d "$TOOLS_DIR"/tofu-"$TOFU_SERIES".* 2>/dev/null | sed 's/.*tofu-//' | sort -V | tail -n1 || true)"
		[ -n "$TOFU_VERSION" ] || die "cannot list OpenTofu versions from the Go module proxy and nothing is cached"
		log "Go module proxy unreachable; using cached OpenTofu $TOFU_VERSION"
	fi
fi
TOFU_DIR="$TOOLS_DIR/tofu-$TOFU_VERSION"
TOFU_PATH="$TOFU_DIR/tofu" TOFU_BUILD=0
# tofu_ok: the cached binary runs and reports exactly this (non -dev) version.
tofu_ok() { [ -x "$TOFU_PATH" ] && [ "$("$TOFU_PATH" version 2>/dev/null | head -n1)" = "OpenTofu v$TOFU_VERSION" ]; }
if ! tofu_ok; then
	TOFU_BUILD=1
fi

# ---------------------------------------------------------------- builders
build_terraform() { # $1 = cache dir
	local dir="$1"
	mkdir -p "$dir"
	rm -f "$dir/terraform"
	# version.dev=no as in upstream release builds, so it reports "v1.8.5", not "v1.8.5-dev".
	(cd / && GOBIN="$dir" go install -ldflags "-s -w -X github.com/hashicorp/terraform/version.dev=no" \
		"github.com/hashicorp/terraform@v$TF_BUILD_VERSION")
}

build_tofu() { # $1 = cache dir, $2 = version
	local dir="$1" ver="$2" work gomod rep
	mkdir -p "$dir"
	work="$(mktemp -d)"
	# shellcheck disable=SC2064
	trap "rm -rf '$work'" EXIT # runs in its own background subshell
	gomod="$(cd / && go mod download -json "github.com/opentofu/opentofu@v$ver" |
		sed -n 's/.*"GoMod": *"\([^"]*\)".*/\1/p')"
	[ -f "$gomod" ] || { echo "cannot fetch go.mod of opentofu v$ver" >&2; return 1; }
	# The hcl fork replace must be repeated: replaces only apply in the main module.
	# Handles both "replace X v => Y v" and a replace ( ... ) block; keeps the old version if given.
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
	cd "$work"
	go mod init sandboxer.local/tofubuild >/dev/null 2>&1
	cat >tools.go <<-'EOF'
	//go:build tools

	package tools

	import _ "github.com/opentofu/opentofu/cmd/tofu"
	EOF
	go mod edit -require="github.com/opentofu/opentofu@v$ver" -replace="$rep"
	go mod tidy
	go build -ldflags "-s -w -X github.com/opentofu/opentofu/version.dev=no" \
		-o "$dir/tofu.tmp" github.com/opentofu/opentofu/cmd/tofu
	mv -f "$dir/tofu.tmp" "$dir/tofu"
}

pids=() names=() logs=()
if [ -n "$TF_BUILD_DIR" ]; then
	mkdir -p "$TF_BUILD_DIR"
	log "building Terraform v$TF_BUILD_VERSION into $TF_BUILD_DIR (several minutes; log: $TF_BUILD_DIR/build.log)"
	build_terraform "$TF_BUILD_DIR" >"$TF_BUILD_DIR/build.log" 2>&1 &
	pids+=("$!") names+=("Terraform") logs+=("$TF_BUILD_DIR/build.log")
fi
if [ "$TOFU_BUILD" = 1 ]; then
	mkdir -p "$TOFU_DIR"
	log "building OpenTofu v$TOFU_VERSION into $TOFU_DIR (several minutes; log: $TOFU_DIR/build.log)"
	build_tofu "$TOFU_DIR" "$TOFU_VERSION" >"$TOFU_DIR/build.log" 2>&1 &
	pids+=("$!") names+=("OpenTofu") logs+=("$TOFU_DIR/build.log")
fi
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

# ---------------------------------------------------------------- verify
[ -n "$(tf_version "$TF_PATH")" ] || die "Terraform at $TF_PATH does not run 'version'"
tofu_ok || die "OpenTofu at $TOFU_PATH does not run 'version' or does not report v$TOFU_VERSION"

echo "TF_ACC_TERRAFORM_PATH=$TF_PATH"
echo "SANDBOXER_TOFU_PATH=$TOFU_PATH"
