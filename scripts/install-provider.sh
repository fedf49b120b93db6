#!/usr/bin/env bash
# install-provider.sh (make install): builds the provider from this working
# tree as a release is built (static, -trimpath, stripped), versioned
# X.Y.Z+dev.<UTC date>.<UTC time>[.<commit>][.dirty] (scripts/version.sh dev),
# and installs it into the implied local mirror directory that Terraform and
# OpenTofu both search, once under each CLI's registry host:
#
#   ~/.terraform.d/plugins/registry.terraform.io/sand-boxer/sandboxer/<version>/<os>_<arch>/
#   ~/.terraform.d/plugins/registry.opentofu.org/sand-boxer/sandboxer/<version>/<os>_<arch>/
#
# each holding terraform-provider-sandboxer_v<version> and, as a release zip
# does, the standalone checkpoint agents for Linux hosts
# (sandboxer-agent_linux_amd64, _arm64: scripts/build-agents.sh), which the
# provider finds beside its executable for SSH hosts of another platform.
#
# Every build gets its own version, and the builds this script installed
# before (versions "+dev.") are removed: `terraform init` in a new directory
# takes the new build, and a directory initialised with an earlier one takes
# it with `terraform init -upgrade` (plain init says the previously-selected
# version is no longer available). Nothing is ever replaced under a version
# a lock file may have recorded, so no init fails on a checksum. Released
# versions (no "+dev.") found there are left alone.
#
#   bash scripts/install-provider.sh              build and install
#   bash scripts/install-provider.sh uninstall    remove the installed dev builds
#
# SANDBOXER_PLUGINS_DIR overrides ~/.terraform.d/plugins. Unix only
# (Linux, macOS); GOOS/GOARCH pick another platform to build for.
set -euo pipefail

repo_root="$(cd "$(dirname "$0")/.." && pwd)"
plugins_dir="${SANDBOXER_PLUGINS_DIR:-$HOME/.terraform.d/plugins}"
registries=(registry.terraform.io registry.opentofu.org)
provider_path="sand-boxer/sandboxer"

log() { echo "install-provider.sh: $*" >&2; }
die() { echo "install-provider.sh: ERROR: $*" >&2; exit 1; }

mode="${1:-install}"
case "$mode" in install | uninstall) ;; *) echo "usage: install-provider.sh [uninstall]" >&2; exit 2 ;; esac

# remove_dev_builds [KEEP]: removes every installed "+dev." version but KEEP.
remove_dev_builds() {
	local keep="${1:-}" reg d
	for reg in "${registries[@]}"; do
		for d in "$plugins_dir/$reg/$provider_path/"*+dev.*; do
			[ -d "$d" ] || continue
			[ "$(basename "$d")" != "$keep" ] || continue
			rm -rf -- "$d"
			log "removed $d"
		done
	done
}

if [ "$mode" = uninstall ]; then
	remove_dev_builds
	exit 0
fi

command -v go >/dev/null 2>&1 || die "go is not on PATH"
platform="$(go env GOOS)_$(go env GOARCH)"

# A new version each build; two builds in the same second wait for the next.
while :; do
	version="$(bash "$repo_root/scripts/version.sh" dev)"
	[ -e "$plugins_dir/${registries[0]}/$provider_path/$version" ] || break
	sleep 1
done
binary="terraform-provider-sandboxer_v$version"

stage="$(mktemp -d "${TMPDIR:-/tmp}/sandboxer-install.XXXXXX")"
trap 'rm -rf -- "$stage"' EXIT

log "building $binary for $platform"
(cd "$repo_root" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$version" -o "$stage/$binary" .)
bash "$repo_root/scripts/build-agents.sh" "$stage" >/dev/null

for reg in "${registries[@]}"; do
	dest="$plugins_dir/$reg/$provider_path/$version/$platform"
	mkdir -p "$dest"
	for f in "$stage"/*; do
		install -m 0755 "$f" "$dest/"
	done
	log "installed $dest"
done
remove_dev_builds "$version"

cat >&2 <<EOF
install-provider.sh: sand-boxer/sandboxer $version is installed for Terraform and OpenTofu.
  A new working directory: terraform init (or tofu init), no version constraint needed.
  One initialised with an earlier build: terraform init -upgrade (or tofu init -upgrade).
EOF
echo "$version"
