#!/usr/bin/env bash
# test-release.sh: builds a release as .github/workflows/release.yml does and
# installs it as users would, with Terraform and with OpenTofu.
#
# 1. Build: `goreleaser release --snapshot --clean` with .goreleaser.yml,
#    versioned as the CHANGELOG says (scripts/version.sh), signed with a
#    throwaway GPG key made for the run in a temporary GNUPGHOME. For this
#    machine's platform only (linux/amd64 in CI), to keep the run short:
#    `release` has no --single-target, so a copy of .goreleaser.yml with
#    goos/goarch narrowed is used; the full matrix stays for real releases.
# 2. The artifacts as the registry takes them: gpg verifies the detached
#    signature of SHA256SUMS, which lists exactly the zip and the manifest
#    (terraform-registry-manifest.json, as the release uploads it) with their
#    checksums; the zip holds terraform-provider-sandboxer_v<version>, which
#    reports that version, the two Linux checkpoint agents and LICENSE.
# 3. From a registry: the artifacts served over the provider registry
#    protocol (scripts/testregistry, HTTPS on 127.0.0.1, named by a CLI
#    config `host` block) with the key's public half. init of a copy of
#    examples/quickstart: the CLI verifies the signature; the lock holds
#    version <version>, the zh: hashes SHA256SUMS lists and an h1:;
#    `version` shows the provider at <version>; apply, then destroy.
# 4. From a filesystem mirror: the zip in a filesystem_mirror (packed layout,
#    under both registry hosts), a CLI config with only that
#    provider_installation method (no dev_overrides, no registry): init of a
#    new copy takes it (lock: <version> and the same h1:); apply, destroy.
#    The registry-initialised directory's lock accepts the mirror's zip (init
#    again, lock unchanged), and `providers lock -fs-mirror -platform` agrees
#    with both locks.
#
#   bash scripts/test-release.sh
#
# TF_ACC_TERRAFORM_PATH, SANDBOXER_TOFU_PATH and SANDBOXER_GORELEASER name
# the tools; unset, scripts/harness/tools.sh obtains them. Needs gpg, unzip
# and git (scripts/harness/install.sh). Everything it makes is removed on exit.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$REPO_ROOT"
die() { echo "test-release.sh: ERROR: $*" >&2; exit 1; }
step() { echo "test-release.sh: $*" >&2; }

for c in gpg gpgconf unzip git sha256sum; do
	command -v "$c" >/dev/null 2>&1 || die "$c is not on PATH (scripts/harness/install.sh installs it)"
done
if [ -z "${TF_ACC_TERRAFORM_PATH:-}" ] || [ -z "${SANDBOXER_TOFU_PATH:-}" ] || [ -z "${SANDBOXER_GORELEASER:-}" ]; then
	tools_out="$(bash scripts/harness/tools.sh all)" || die "obtaining the tools failed (see above)"
	eval "$(printf '%s\n' "$tools_out" | sed 's/^/export /')"
fi

# Short: gpg-agent's socket lives in GNUPGHOME.
tmp="$(mktemp -d /tmp/sbx-release.XXXXXX)"
registry_pid=""
applied=()
cleanup() {
	local rc=$? d
	trap - EXIT
	for d in "${applied[@]}"; do
		"${d%%:*}" -chdir="${d#*:}" destroy -auto-approve -no-color >/dev/null 2>&1 || true
	done
	[ -z "$registry_pid" ] || kill "$registry_pid" 2>/dev/null || true
	[ ! -d "$tmp/gnupg" ] || GNUPGHOME="$tmp/gnupg" gpgconf --kill gpg-agent 2>/dev/null || true
	rm -rf -- "$tmp"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

version="$(bash scripts/version.sh)"
goos="$(go env GOOS)" goarch="$(go env GOARCH)"
platform="${goos}_$goarch"
name="terraform-provider-sandboxer"
dist="$tmp/dist"

# ---------------------------------------------------------------- 1. build
step "a GPG key for the run"
export GNUPGHOME="$tmp/gnupg"
mkdir -m 700 "$GNUPGHOME"
gpg --batch --quiet --pinentry-mode loopback --passphrase '' \
	--quick-gen-key "sandboxer release test <release-test@sandboxer.invalid>" rsa3072 sign 1d 2>/dev/null
fingerprint="$(gpg --batch --quiet --list-secret-keys --with-colons 2>/dev/null | awk -F: '$1 == "fpr" && !n++ { print $10 }')"
[ -n "$fingerprint" ] || die "no key was made"
gpg --batch --armor --export "$fingerprint" >"$tmp/signing-key.asc"

step "goreleaser release --snapshot for $platform, version $version"
# .goreleaser.yml with one goos and one goarch, and dist/ out of the tree.
awk -v os="$goos" -v arch="$goarch" -v dist="$dist" '
	BEGIN { print "dist: " dist }
	/^    goos:$/ { print; print "      - " os; skip = 1; next }
	/^    goarch:$/ { print; print "      - " arch; skip = 1; next }
	skip && /^      - / { next }
	{ skip = 0; print }' .goreleaser.yml >"$tmp/goreleaser.yml"
[ "$(grep -c -e '^    goos:$' -e '^    goarch:$' "$tmp/goreleaser.yml")" = 2 ] || die ".goreleaser.yml no longer has the goos/goarch lists this script narrows"
# Without a remote (a local clone) goreleaser falls back to dates of now;
# with one it takes the commit's, as in CI. The URL is only read, never used.
git_env=()
if [ -z "$(git remote)" ]; then
	git_env=(GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url
		GIT_CONFIG_VALUE_0=https://github.com/sand-boxer/terraform-provider-sandboxer.git)
fi
if ! env "${git_env[@]}" SANDBOXER_VERSION="$version" GPG_FINGERPRINT="$fingerprint" \
	"$SANDBOXER_GORELEASER" release --snapshot --clean -f "$tmp/goreleaser.yml" >"$tmp/goreleaser.log" 2>&1; then
	tail -n 40 "$tmp/goreleaser.log" >&2
	die "goreleaser release --snapshot failed"
fi

# ---------------------------------------------------------------- 2. artifacts
step "checking the artifacts"
zip="${name}_${version}_$platform.zip"
sums="${name}_${version}_SHA256SUMS"
manifest="${name}_${version}_manifest.json"
for f in "$zip" "$sums" "$sums.sig"; do
	[ -f "$dist/$f" ] || die "goreleaser made no $f (dist: $(ls "$dist"))"
done
# The release uploads the manifest under this name (release.extra_files).
cp terraform-registry-manifest.json "$dist/$manifest"
gpg --batch --verify "$dist/$sums.sig" "$dist/$sums" 2>"$tmp/gpg-verify.log" ||
	{ cat "$tmp/gpg-verify.log" >&2; die "the signature of $sums does not verify"; }
[ "$(awk '{ print $2 }' "$dist/$sums" | sort | tr '\n' ' ')" = "$(printf '%s\n' "$zip" "$manifest" | sort | tr '\n' ' ')" ] ||
	die "$sums lists $(awk '{ print $2 }' "$dist/$sums" | tr '\n' ' '), want $zip and $manifest"
(cd "$dist" && sha256sum --strict --quiet -c "$sums") || die "a checksum in $sums does not match"
[ "$(unzip -Z1 "$dist/$zip" | sort | tr '\n' ' ')" = "LICENSE sandboxer-agent_linux_amd64 sandboxer-agent_linux_arm64 ${name}_v$version " ] ||
	die "$zip holds: $(unzip -Z1 "$dist/$zip" | tr '\n' ' ')"
unzip -q "$dist/$zip" -d "$tmp/unzipped"
[ "$("$tmp/unzipped/${name}_v$version" -version)" = "$name $version" ] ||
	die "the released binary reports \"$("$tmp/unzipped/${name}_v$version" -version)\", want \"$name $version\""
zip_sum="$(awk -v f="$zip" '$2 == f { print $1 }' "$dist/$sums")"
manifest_sum="$(awk -v f="$manifest" '$2 == f { print $1 }' "$dist/$sums")"

# ---------------------------------------------------------------- CLIs
go build -o "$tmp/testregistry" ./scripts/testregistry
# Go keeps its settings; the CLIs get a HOME of their own (no plugins from
# make install in ~/.terraform.d, which would shadow the registry).
GOENV="$(go env GOENV)" && export GOENV
export HOME="$tmp/home" XDG_DATA_HOME="$tmp/data" CHECKPOINT_DISABLE=1
mkdir -p "$HOME" "$XDG_DATA_HOME"
unset TF_PLUGIN_CACHE_DIR TF_CLI_ARGS TF_CLI_ARGS_init TF_CLI_ARGS_apply TF_CLI_ARGS_destroy

step "serving the release over the provider registry protocol"
"$tmp/testregistry" -dist "$dist" -manifest terraform-registry-manifest.json -key "$tmp/signing-key.asc" \
	-key-id "${fingerprint: -16}" -cert "$tmp/registry-cert.pem" -addr-file "$tmp/registry-addr" 2>"$tmp/registry.log" &
registry_pid=$!
for _ in $(seq 1 100); do [ -s "$tmp/registry-addr" ] || sleep 0.1; done
[ -s "$tmp/registry-addr" ] || { cat "$tmp/registry.log" >&2; die "the test registry did not start"; }
registry="https://$(cat "$tmp/registry-addr")/v1/providers/"
export SSL_CERT_FILE="$tmp/registry-cert.pem"
cat >"$tmp/registry.tfrc" <<EOF
host "registry.terraform.io" {
  services = {
    "providers.v1" = "$registry"
  }
}
host "registry.opentofu.org" {
  services = {
    "providers.v1" = "$registry"
  }
}
EOF
mirror="$tmp/mirror"
for reg in registry.terraform.io registry.opentofu.org; do
	mkdir -p "$mirror/$reg/sand-boxer/sandboxer"
	cp "$dist/$zip" "$mirror/$reg/sand-boxer/sandboxer/"
done
cat >"$tmp/mirror.tfrc" <<EOF
provider_installation {
  filesystem_mirror {
    path = "$mirror"
  }
}
EOF

lock_version() { sed -n 's/^ *version *= *"\(.*\)"$/\1/p' "$1/.terraform.lock.hcl"; }
lock_hashes() { sed -n 's/^ *"\([hz][h1]:[^"]*\)",$/\1/p' "$1/.terraform.lock.hcl" | sort | tr '\n' ' '; }
lock_h1() { sed -n 's/^ *"\(h1:[^"]*\)",$/\1/p' "$1/.terraform.lock.hcl"; }
newdir() { mkdir -p "$1" && cp -R examples/quickstart/. "$1/"; }

# apply_destroy CLI BIN DIR: applies the quickstart, checks the sandbox, destroys it.
apply_destroy() {
	local cli="$1" b="$2" d="$3" ws
	applied+=("$b:$d")
	"$b" -chdir="$d" apply -auto-approve -no-color -input=false >"$d.apply.log" 2>&1 ||
		{ cat "$d.apply.log" >&2; die "$cli apply failed in $d"; }
	[ "$("$b" -chdir="$d" output -raw status)" = ready ] || die "$cli: the sandbox is not ready"
	ws="$("$b" -chdir="$d" output -raw workspace_dir)"
	[ -f "$ws/hello.sh" ] || die "$cli: the workspace $ws does not hold the app"
	"$b" -chdir="$d" destroy -auto-approve -no-color -input=false >"$d.destroy.log" 2>&1 ||
		{ cat "$d.destroy.log" >&2; die "$cli destroy failed in $d"; }
	applied=("${applied[@]:0:${#applied[@]}-1}")
	[ ! -e "$ws" ] || die "$cli destroy left $ws"
}

declare -A bin=([terraform]="$TF_ACC_TERRAFORM_PATH" [tofu]="$SANDBOXER_TOFU_PATH")
declare -A host=([terraform]=registry.terraform.io [tofu]=registry.opentofu.org)
for cli in terraform tofu; do
	b="${bin[$cli]}"

	# ------------------------------------------------------------ 3. registry
	step "$cli: init from the registry, apply, destroy"
	export TF_CLI_CONFIG_FILE="$tmp/registry.tfrc"
	reg_dir="$tmp/$cli-registry"
	newdir "$reg_dir"
	"$b" -chdir="$reg_dir" init -no-color -input=false >"$reg_dir.init.log" 2>&1 ||
		{ cat "$reg_dir.init.log" >&2; die "$cli init from the registry failed"; }
	grep -Eq "Installed sand-boxer/sandboxer v$version \((self-)?signed, key ID ${fingerprint: -16}\)" "$reg_dir.init.log" ||
		{ cat "$reg_dir.init.log" >&2; die "$cli did not install v$version signed by the release key"; }
	[ "$(lock_version "$reg_dir")" = "$version" ] || die "$cli locked version $(lock_version "$reg_dir"), want $version"
	h1="$(lock_h1 "$reg_dir")"
	[ "$(printf '%s\n' "$h1" | grep -c .)" = 1 ] || die "$cli lock: want one h1: hash, found: $h1"
	want="$(printf '%s\n' "$h1" "zh:$zip_sum" "zh:$manifest_sum" | sort | tr '\n' ' ')"
	[ "$(lock_hashes "$reg_dir")" = "$want" ] ||
		die "$cli lock hashes: $(lock_hashes "$reg_dir"); want the zh: of SHA256SUMS and one h1: ($want)"
	"$b" -chdir="$reg_dir" version | grep -xF "+ provider ${host[$cli]}/sand-boxer/sandboxer v$version" >/dev/null ||
		die "$cli version does not show ${host[$cli]}/sand-boxer/sandboxer v$version: $("$b" -chdir="$reg_dir" version)"
	# Beside the executable the CLI runs, where the provider looks for an SSH host's agent.
	for f in sandboxer-agent_linux_amd64 sandboxer-agent_linux_arm64; do
		[ -x "$reg_dir/.terraform/providers/${host[$cli]}/sand-boxer/sandboxer/$version/$platform/$f" ] ||
			die "$cli installed no $f beside the provider"
	done
	apply_destroy "$cli" "$b" "$reg_dir"

	# ------------------------------------------------------------ 4. mirror
	step "$cli: init from the filesystem mirror, apply, destroy; providers lock -fs-mirror"
	export TF_CLI_CONFIG_FILE="$tmp/mirror.tfrc"
	mir_dir="$tmp/$cli-mirror"
	newdir "$mir_dir"
	"$b" -chdir="$mir_dir" init -no-color -input=false >"$mir_dir.init.log" 2>&1 ||
		{ cat "$mir_dir.init.log" >&2; die "$cli init from the filesystem mirror failed"; }
	[ "$(lock_version "$mir_dir")" = "$version" ] || die "$cli locked version $(lock_version "$mir_dir") from the mirror, want $version"
	[ "$(lock_hashes "$mir_dir")" = "$h1 " ] || die "$cli lock from the mirror: $(lock_hashes "$mir_dir"), want $h1 (as from the registry)"
	"$b" -chdir="$mir_dir" version | grep -xF "+ provider ${host[$cli]}/sand-boxer/sandboxer v$version" >/dev/null ||
		die "$cli version does not show ${host[$cli]}/sand-boxer/sandboxer v$version after init from the mirror"
	apply_destroy "$cli" "$b" "$mir_dir"

	# The registry's lock accepts the mirror's zip.
	cp "$reg_dir/.terraform.lock.hcl" "$tmp/$cli-registry.lock"
	rm -rf "$reg_dir/.terraform"
	"$b" -chdir="$reg_dir" init -no-color -input=false >"$reg_dir.init2.log" 2>&1 ||
		{ cat "$reg_dir.init2.log" >&2; die "$cli init from the mirror with the registry's lock failed"; }
	cmp -s "$reg_dir/.terraform.lock.hcl" "$tmp/$cli-registry.lock" || die "$cli init from the mirror changed the registry's lock"

	# providers lock agrees: leaves the registry's lock as it is, and writes the mirror one's in a new directory.
	"$b" -chdir="$reg_dir" providers lock -fs-mirror="$mirror" -platform="$platform" -no-color >"$reg_dir.lock.log" 2>&1 ||
		{ cat "$reg_dir.lock.log" >&2; die "$cli providers lock -fs-mirror disagrees with the registry's lock"; }
	cmp -s "$reg_dir/.terraform.lock.hcl" "$tmp/$cli-registry.lock" || die "$cli providers lock -fs-mirror changed the registry's lock"
	lock_dir="$tmp/$cli-lock"
	newdir "$lock_dir"
	"$b" -chdir="$lock_dir" providers lock -fs-mirror="$mirror" -platform="$platform" -no-color >"$lock_dir.lock.log" 2>&1 ||
		{ cat "$lock_dir.lock.log" >&2; die "$cli providers lock -fs-mirror failed"; }
	if [ "$(lock_version "$lock_dir")" != "$version" ] || [ "$(lock_hashes "$lock_dir")" != "$(lock_hashes "$mir_dir")" ]; then
		die "$cli providers lock -fs-mirror wrote $(lock_version "$lock_dir") $(lock_hashes "$lock_dir"), init wrote $version $(lock_hashes "$mir_dir")"
	fi
done

echo "test-release.sh: PASS: release $version ($platform) built, signed and verified; installed from a registry and from a filesystem mirror, applied and destroyed with $("$TF_ACC_TERRAFORM_PATH" version | sed -n 1p) and $("$SANDBOXER_TOFU_PATH" version | sed -n 1p)"
