#!/usr/bin/env bash
# test-install.sh: `make install` as a developer uses it, with Terraform and
# with OpenTofu, on examples/quickstart (its terraform block is the README's:
# source "sand-boxer/sandboxer", no version constraint), no CLI config:
#
# 1. make install; init takes the build from ~/.terraform.d/plugins, the lock
#    and `version` name its version (X.Y.Z+dev...: scripts/version.sh), the
#    binary reports the same (-version); plan runs. The README's example
#    (its first hcl block) inits and validates too.
# 2. A change to the source (in a copy of this tree), make install again: a
#    new version, the earlier build gone from both registry hosts' directories.
# 3. In the directories initialised with the earlier build, plan and plain
#    init fail saying so, and never with a checksum error; init -upgrade takes
#    the new build and plan runs on it (the change is in the binary it runs).
#    A new directory takes the new build with plain init.
#
#   TF_ACC_TERRAFORM_PATH=... SANDBOXER_TOFU_PATH=... bash scripts/test-install.sh
#
# Unset, the CLIs come from scripts/harness/tools.sh. Everything happens under
# a temporary HOME (its ~/.terraform.d/plugins is the test's own) and is
# removed on exit.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "$0")/.." && pwd)"
die() { echo "test-install.sh: ERROR: $*" >&2; exit 1; }
step() { echo "test-install.sh: $*" >&2; }

if [ -z "${TF_ACC_TERRAFORM_PATH:-}" ] || [ -z "${SANDBOXER_TOFU_PATH:-}" ]; then
	tools_out="$(bash "$REPO_ROOT/scripts/harness/tools.sh" all)" || die "obtaining the CLIs failed (see above)"
	eval "$(printf '%s\n' "$tools_out" | sed 's/^/export /')"
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/sandboxer-install-test.XXXXXX")"
trap 'rm -rf -- "$tmp"' EXIT
# Go keeps its caches and settings where they are; the CLIs see a new HOME.
GOCACHE="$(go env GOCACHE)" GOMODCACHE="$(go env GOMODCACHE)" GOPATH="$(go env GOPATH)" GOENV="$(go env GOENV)"
export GOCACHE GOMODCACHE GOPATH GOENV
export HOME="$tmp/home" XDG_DATA_HOME="$tmp/data" CHECKPOINT_DISABLE=1
mkdir -p "$HOME" "$XDG_DATA_HOME"
unset TF_CLI_CONFIG_FILE TF_PLUGIN_CACHE_DIR TF_CLI_ARGS TF_CLI_ARGS_init TF_CLI_ARGS_plan
plugins="$HOME/.terraform.d/plugins"
platform="$(go env GOOS)_$(go env GOARCH)"
checksum_error='match any of the checksums'

lock_version() { sed -n 's/^ *version *= *"\(.*\)"$/\1/p' "$1/.terraform.lock.hcl"; }

# installed VERSION: checks both registry hosts' directories hold that build.
installed() {
	local v="$1" reg d
	for reg in registry.terraform.io registry.opentofu.org; do
		d="$plugins/$reg/sand-boxer/sandboxer/$v/$platform"
		for f in "terraform-provider-sandboxer_v$v" sandboxer-agent_linux_amd64 sandboxer-agent_linux_arm64; do
			[ -x "$d/$f" ] || die "make install did not install $d/$f"
		done
		[ "$("$d/terraform-provider-sandboxer_v$v" -version)" = "terraform-provider-sandboxer $v" ] ||
			die "$d/terraform-provider-sandboxer_v$v -version: $("$d/terraform-provider-sandboxer_v$v" -version)"
	done
}

dev_version='^[0-9]+\.[0-9]+\.[0-9]+\+dev\.[0-9]{8}\.[0-9]{6}(\.[0-9a-f]{7,})?(\.dirty)?$'

step "make install"
v1="$(make -s -C "$REPO_ROOT" install | tail -n1)"
[[ "$v1" =~ $dev_version ]] || die "make install printed version \"$v1\""
[ "${v1%%+*}" = "$(bash "$REPO_ROOT/scripts/version.sh")" ] || die "$v1 is not a build of the CHANGELOG's version"
installed "$v1"

clis=(terraform tofu)
declare -A bin=([terraform]="$TF_ACC_TERRAFORM_PATH" [tofu]="$SANDBOXER_TOFU_PATH")
declare -A host=([terraform]=registry.terraform.io [tofu]=registry.opentofu.org)

for cli in "${clis[@]}"; do
	wd="$tmp/$cli-wd"
	mkdir -p "$wd" && cp -R "$REPO_ROOT/examples/quickstart/." "$wd/"
	step "$cli init, version, plan on $v1"
	"${bin[$cli]}" -chdir="$wd" init -no-color -input=false >"$tmp/$cli-init1.log" 2>&1 ||
		{ cat "$tmp/$cli-init1.log" >&2; die "$cli init after make install failed"; }
	[ "$(lock_version "$wd")" = "$v1" ] || die "$cli locked $(lock_version "$wd"), not $v1"
	# Beside the executable the CLI runs, where the provider looks for an SSH host's agent.
	for f in sandboxer-agent_linux_amd64 sandboxer-agent_linux_arm64; do
		[ -x "$wd/.terraform/providers/${host[$cli]}/sand-boxer/sandboxer/$v1/$platform/$f" ] || die "$cli installed no $f beside the provider"
	done
	"${bin[$cli]}" -chdir="$wd" version | grep -xF "+ provider ${host[$cli]}/sand-boxer/sandboxer v$v1" >/dev/null ||
		die "$cli version does not show ${host[$cli]}/sand-boxer/sandboxer v$v1: $("${bin[$cli]}" -chdir="$wd" version)"
	rc=0
	"${bin[$cli]}" -chdir="$wd" plan -no-color -input=false -detailed-exitcode >"$tmp/$cli-plan1.log" 2>&1 || rc=$?
	[ "$rc" = 2 ] || { cat "$tmp/$cli-plan1.log" >&2; die "$cli plan exited $rc, want 2 (changes)"; }

	step "$cli init and validate of the README's example on $v1"
	rd="$tmp/$cli-readme"
	mkdir -p "$rd"
	awk '/^```hcl$/ { on = 1; next } on && /^```$/ { exit } on' "$REPO_ROOT/README.md" >"$rd/main.tf"
	grep -q 'source = "sand-boxer/sandboxer"' "$rd/main.tf" || die "README example not found or changed shape"
	"${bin[$cli]}" -chdir="$rd" init -no-color -input=false >"$tmp/$cli-readme-init.log" 2>&1 ||
		{ cat "$tmp/$cli-readme-init.log" >&2; die "$cli init of the README's example failed"; }
	[ "$(lock_version "$rd")" = "$v1" ] || die "$cli locked $(lock_version "$rd") for the README's example, not $v1"
	"${bin[$cli]}" -chdir="$rd" validate -no-color >"$tmp/$cli-readme-validate.log" 2>&1 ||
		{ cat "$tmp/$cli-readme-validate.log" >&2; die "$cli validate of the README's example failed"; }
done

step "a change to the source (in a copy of the tree), make install again"
src="$tmp/src"
mkdir -p "$src"
(cd "$REPO_ROOT" && git ls-files -z -co --exclude-standard | tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -C "$src" -xf -
marker="SANDBOXER_TEST_INSTALL_CHANGE_$$_$RANDOM"
cat >"$src/zz_install_test_change.go" <<EOF
package main

import "os"

// A change for scripts/test-install.sh: the rebuilt binary differs from the first in more than its version.
var _ = os.Getenv("$marker")
EOF
v2="$(make -s -C "$src" install | tail -n1)"
[[ "$v2" =~ $dev_version ]] || die "make install printed version \"$v2\""
[ "$v2" != "$v1" ] || die "the rebuild got the same version $v1"
installed "$v2"
for reg in registry.terraform.io registry.opentofu.org; do
	[ ! -e "$plugins/$reg/sand-boxer/sandboxer/$v1" ] || die "make install left the earlier build $plugins/$reg/sand-boxer/sandboxer/$v1"
	grep -aqF "$marker" "$plugins/$reg/sand-boxer/sandboxer/$v2/$platform/terraform-provider-sandboxer_v$v2" ||
		die "the rebuilt binary does not hold the change"
done

for cli in "${clis[@]}"; do
	wd="$tmp/$cli-wd"
	step "$cli in the directory initialised with $v1: plan, init, init -upgrade, plan"
	if "${bin[$cli]}" -chdir="$wd" plan -no-color -input=false >"$tmp/$cli-plan2.log" 2>&1; then
		die "$cli plan ran although the locked build $v1 is gone"
	fi
	! grep -q "$checksum_error" "$tmp/$cli-plan2.log" || { cat "$tmp/$cli-plan2.log" >&2; die "$cli plan failed on a checksum"; }
	grep -q "$cli init" "$tmp/$cli-plan2.log" || { cat "$tmp/$cli-plan2.log" >&2; die "$cli plan does not say to run $cli init"; }

	if "${bin[$cli]}" -chdir="$wd" init -no-color -input=false >"$tmp/$cli-init2.log" 2>&1; then
		die "plain $cli init succeeded although the locked build $v1 is gone"
	fi
	! grep -q "$checksum_error" "$tmp/$cli-init2.log" || { cat "$tmp/$cli-init2.log" >&2; die "$cli init failed on a checksum"; }
	grep -q "no longer available" "$tmp/$cli-init2.log" || { cat "$tmp/$cli-init2.log" >&2; die "$cli init did not say $v1 is no longer available"; }

	"${bin[$cli]}" -chdir="$wd" init -upgrade -no-color -input=false >"$tmp/$cli-init3.log" 2>&1 ||
		{ cat "$tmp/$cli-init3.log" >&2; die "$cli init -upgrade failed"; }
	[ "$(lock_version "$wd")" = "$v2" ] || die "$cli init -upgrade locked $(lock_version "$wd"), not $v2"
	grep -aqF "$marker" "$wd/.terraform/providers/${host[$cli]}/sand-boxer/sandboxer/$v2/$platform/terraform-provider-sandboxer_v$v2" ||
		die "$cli does not run the rebuilt binary"
	rc=0
	"${bin[$cli]}" -chdir="$wd" plan -no-color -input=false -detailed-exitcode >"$tmp/$cli-plan3.log" 2>&1 || rc=$?
	[ "$rc" = 2 ] || { cat "$tmp/$cli-plan3.log" >&2; die "$cli plan after init -upgrade exited $rc, want 2 (changes)"; }

	step "$cli init in a new directory takes $v2"
	wd2="$tmp/$cli-wd2"
	mkdir -p "$wd2" && cp -R "$REPO_ROOT/examples/quickstart/." "$wd2/"
	"${bin[$cli]}" -chdir="$wd2" init -no-color -input=false >"$tmp/$cli-init4.log" 2>&1 ||
		{ cat "$tmp/$cli-init4.log" >&2; die "$cli init in a new directory failed"; }
	[ "$(lock_version "$wd2")" = "$v2" ] || die "$cli locked $(lock_version "$wd2") in a new directory, not $v2"
done

make -s -C "$REPO_ROOT" uninstall 2>/dev/null
[ -z "$(find "$plugins" -mindepth 4 -maxdepth 4 2>/dev/null)" ] || die "make uninstall left: $(find "$plugins" -mindepth 4 -maxdepth 4)"
echo "test-install.sh: PASS: make install, init, rebuild, init -upgrade and plan with $("$TF_ACC_TERRAFORM_PATH" version | sed -n 1p) and $("$SANDBOXER_TOFU_PATH" version | sed -n 1p) ($v1, then $v2)"
