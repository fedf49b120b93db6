#!/usr/bin/env bash
# version.sh: the provider's version, from the one place it is written: the
# first "## X.Y.Z" heading of CHANGELOG.md, the release being prepared
# ("## 0.3.0 (Unreleased)" gives 0.3.0).
#
#   bash scripts/version.sh        X.Y.Z: what a release of this tree is
#                                  called (its tag is vX.Y.Z)
#   bash scripts/version.sh dev    X.Y.Z+dev.<UTC date>.<UTC time>[.<commit>][.dirty]:
#                                  a local build (make install), e.g.
#                                  0.3.0+dev.20260112.093015.746a67a.dirty
#
# A dev version is no prerelease: Terraform and OpenTofu take it without a
# version constraint, as they would X.Y.Z, while "+dev..." (semver build
# metadata) keeps every build apart from the release and from each other, so
# that a rebuild is never mistaken for the build a lock file recorded
# (CONTRIBUTING.md, "Versions").
set -euo pipefail

repo_root="$(cd "$(dirname "$0")/.." && pwd)"
die() { echo "version.sh: ERROR: $*" >&2; exit 1; }

mode="${1:-release}"
case "$mode" in release | dev) ;; *) echo "usage: version.sh [dev]" >&2; exit 2 ;; esac

version="$(sed -n 's/^## \([0-9][0-9]*\.[0-9][0-9]*\.[0-9][0-9]*\)\([[:space:]].*\)\{0,1\}$/\1/p' "$repo_root/CHANGELOG.md" | sed -n 1p)"
[ -n "$version" ] || die "CHANGELOG.md has no heading \"## X.Y.Z\" to take the version from"
if [ "$mode" = release ]; then
	echo "$version"
	exit 0
fi

meta="dev.$(date -u +%Y%m%d.%H%M%S)"
if commit="$(git -C "$repo_root" rev-parse --short=7 HEAD 2>/dev/null)"; then
	meta="$meta.$commit"
	if [ -n "$(git -C "$repo_root" status --porcelain --untracked-files=normal 2>/dev/null)" ]; then
		meta="$meta.dirty"
	fi
fi
echo "$version+$meta"
