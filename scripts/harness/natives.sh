#!/usr/bin/env bash
# natives.sh: a Terraform CLI with the features only Terraform >= 1.14 has
# (actions, list resources and `terraform query`), built once from source
# through the Go module proxy into the tools cache, for the tests of those
# features. Prints SANDBOXER_TERRAFORM_NATIVES=<abs path> on stdout.
#
# Terraform's go.mod replaces its nested remote-state backend modules and
# internal/legacy with relative paths, which the proxy does not serve: a
# throwaway main module requires Terraform and replaces each backend with a
# stand-in (natives/standin.go.tmpl: the backend reports it is not compiled
# in) and internal/legacy with a served pseudo-version. Terraform's source
# is BUSL-licensed: it is built here as a test tool and never enters the
# repository. ~3 minutes cold on 2 cores.
#
# Version: $SANDBOXER_TF_NATIVES_VERSION, default 1.16.2, the newest served (`go list -m
# -versions` stops at 1.13.3; exact versions are served).
set -euo pipefail

VERSION="${SANDBOXER_TF_NATIVES_VERSION:-1.16.2}"
LEGACY="v0.0.0-20250409131005-35645b8fca68"
BACKENDS="azure consul cos gcs kubernetes oci oss pg s3"
TOOLS_DIR="${SANDBOXER_TOOLS_DIR:-$HOME/.cache/sandboxer-tools}"
HERE="$(cd "$(dirname "$0")" && pwd)"
DIR="$TOOLS_DIR/terraform-natives-$VERSION"
BIN="$DIR/terraform"

log() { echo "natives.sh: $*" >&2; }
die() { echo "natives.sh: ERROR: $*" >&2; exit 1; }
ok() { [ -x "$BIN" ] && TF_CLI_CONFIG_FILE=/dev/null "$BIN" version 2>/dev/null | sed -n 1p | grep -x "Terraform v$VERSION" >/dev/null; }

export GOWORK=off GOFLAGS="${GOFLAGS:-}"
mkdir -p "$TOOLS_DIR"
exec 9>"$TOOLS_DIR/.natives.lock"
flock 9
if ! ok; then
	log "building Terraform v$VERSION into $DIR (~3 min; log: $DIR/build.log)"
	rm -rf "$DIR/src" && mkdir -p "$DIR/src"
	(
		cd "$DIR/src"
		args=(-require="github.com/hashicorp/terraform@v$VERSION"
			-replace="github.com/hashicorp/terraform/internal/legacy=github.com/hashicorp/terraform/internal/legacy@$LEGACY")
		for b in $BACKENDS; do
			mkdir -p "standins/$b"
			printf 'module github.com/hashicorp/terraform/internal/backend/remote-state/%s\n\ngo 1.25\n' "$b" >"standins/$b/go.mod"
			sed "s/@NAME@/$b/g" "$HERE/natives/standin.go.tmpl" >"standins/$b/backend.go"
			args+=(-replace="github.com/hashicorp/terraform/internal/backend/remote-state/$b=./standins/$b")
		done
		go mod init sandboxer.local/terraform-natives
		printf '//go:build tools\n\npackage tools\n\nimport _ "github.com/hashicorp/terraform"\n' >tools.go
		go mod edit "${args[@]}"
		go mod tidy
		go build -trimpath -ldflags "-s -w -X github.com/hashicorp/terraform/version.dev=no" -o "$BIN.tmp.$$" github.com/hashicorp/terraform
		mv -f "$BIN.tmp.$$" "$BIN"
	) >"$DIR/build.log" 2>&1 || { tail -n 30 "$DIR/build.log" >&2; die "the build of Terraform v$VERSION failed"; }
	ok || die "$BIN does not report Terraform v$VERSION"
fi
echo "SANDBOXER_TERRAFORM_NATIVES=$BIN"
