#!/usr/bin/env bash
# test-module.sh: runs the test suite of examples/modules/ci-sandbox
# (tests/harness.tftest.hcl) with a Terraform or OpenTofu CLI, against the
# test harness host and a provider built from this working tree.
#
#   bash scripts/test-module.sh /path/to/terraform
#   bash scripts/test-module.sh /path/to/tofu
#
# 1. builds terraform-provider-sandboxer into a temporary directory and
#    writes a CLI config whose dev_overrides point "sand-boxer/sandboxer" at
#    it (TF_CLI_CONFIG_FILE, read by both CLIs); nothing is downloaded and
#    no init is needed
# 2. copies the module to a temporary directory and runs `CLI get` (installs
#    the suite's helper module tests/setup) and `CLI test` there, with the
#    harness's host, key, known_hosts and image in a variables file
# 3. checks that the run left no containers behind (when docker is reachable
#    from here, as it is for the harness on 127.0.0.1)
#
# The harness values come from the environment (SANDBOXER_TEST_SSH_ADDR,
# SANDBOXER_TEST_SSH_USER, SANDBOXER_TEST_SSH_KEY, SANDBOXER_TEST_KNOWN_HOSTS,
# SANDBOXER_TEST_IMAGE) or, when they are not set, from the file
# scripts/harness/up.sh writes: $SANDBOXER_HARNESS_DIR/env, by default
# ~/.cache/sandboxer-harness/env. Exits non-zero when a test fails.
set -euo pipefail

die() { echo "test-module.sh: ERROR: $*" >&2; exit 1; }
log() { echo "test-module.sh: $*" >&2; }

[ $# -eq 1 ] || die "usage: bash scripts/test-module.sh /path/to/terraform-or-tofu"
CLI="$1"
if [[ "$CLI" != */* ]]; then
	CLI="$(command -v -- "$CLI")" || die "$1: not found on PATH"
fi
[ -x "$CLI" ] || die "$CLI: not an executable file"
CLI="$(cd "$(dirname "$CLI")" && pwd)/$(basename "$CLI")"

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODULE_SRC="$REPO_ROOT/examples/modules/ci-sandbox"
[ -d "$MODULE_SRC/tests" ] || die "$MODULE_SRC/tests not found"

# ------------------------------------------------------------- harness values
harness_vars=(SANDBOXER_TEST_SSH_ADDR SANDBOXER_TEST_SSH_USER SANDBOXER_TEST_SSH_KEY
	SANDBOXER_TEST_KNOWN_HOSTS SANDBOXER_TEST_IMAGE)
missing=0
for v in "${harness_vars[@]}"; do [ -n "${!v:-}" ] || missing=1; done
if [ "$missing" = 1 ]; then
	env_file="${SANDBOXER_HARNESS_DIR:-$HOME/.cache/sandboxer-harness}/env"
	[ -r "$env_file" ] || die "harness values not set and $env_file not found; bring the harness up with: bash scripts/harness/up.sh"
	# Values already set win over the file's.
	preset=()
	for v in "${harness_vars[@]}"; do [ -z "${!v:-}" ] || preset+=("$v=${!v}"); done
	# shellcheck disable=SC1090
	. "$env_file"
	for kv in ${preset[@]+"${preset[@]}"}; do export "${kv%%=*}=${kv#*=}"; done
fi
for v in "${harness_vars[@]}"; do
	[ -n "${!v:-}" ] || die "$v is not set (nor in the harness env file)"
done

# --------------------------------------------------------------- scratch dir
TMP="$(mktemp -d "${TMPDIR:-/tmp}/sandboxer-module-test.XXXXXX")"
cleanup() {
	local rc=$?
	trap - EXIT
	rm -rf -- "$TMP"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ------------------------------------------------- provider and CLI config
log "building the provider from $REPO_ROOT ..."
mkdir -p "$TMP/bin"
(cd "$REPO_ROOT" && go build -o "$TMP/bin/terraform-provider-sandboxer" .)

# The short source address resolves to registry.terraform.io/... under
# Terraform and registry.opentofu.org/... under OpenTofu: the module's
# required_providers names it the same way, so this override fits both.
cat >"$TMP/cli.tfrc" <<EOF
provider_installation {
  dev_overrides {
    "sand-boxer/sandboxer" = "$TMP/bin"
  }
  direct {}
}
EOF
# Only this config: OpenTofu prefers TOFU_CLI_CONFIG_FILE when set.
export TF_CLI_CONFIG_FILE="$TMP/cli.tfrc" TOFU_CLI_CONFIG_FILE="$TMP/cli.tfrc"
export CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1
unset TF_WORKSPACE TF_DATA_DIR TF_CLI_ARGS TF_CLI_ARGS_test

version_out="$("$CLI" version)" || die "$CLI version failed"
version_line="${version_out%%$'\n'*}"
case "$version_line" in
OpenTofu*) cli_name=OpenTofu ;;
Terraform*) cli_name=Terraform ;;
*) die "$CLI does not look like Terraform or OpenTofu: $version_line" ;;
esac
log "CLI: $CLI ($version_line)"

# -------------------------------------------------------- module and vars
work="$TMP/ci-sandbox"
mkdir -p "$work"
cp -R "$MODULE_SRC/." "$work/"
rm -rf -- "$work/.terraform" "$work/.terraform.lock.hcl" "$work"/*.tfstate "$work"/*.tfstate.backup

json_str() { # a JSON string literal
	local s="$1"
	s="${s//\\/\\\\}"
	s="${s//\"/\\\"}"
	s="${s//$'\t'/\\t}"
	s="${s//$'\n'/\\n}"
	printf '"%s"' "$s"
}
test_run="ci-sandbox-$(date +%Y%m%d%H%M%S)-$$"
vars_file="$TMP/harness.tfvars.json"
{
	printf '{\n'
	printf '  "ssh_address": %s,\n' "$(json_str "$SANDBOXER_TEST_SSH_ADDR")"
	printf '  "ssh_user": %s,\n' "$(json_str "$SANDBOXER_TEST_SSH_USER")"
	printf '  "ssh_private_key_file": %s,\n' "$(json_str "$SANDBOXER_TEST_SSH_KEY")"
	printf '  "ssh_known_hosts_file": %s,\n' "$(json_str "$SANDBOXER_TEST_KNOWN_HOSTS")"
	printf '  "image": %s,\n' "$(json_str "$SANDBOXER_TEST_IMAGE")"
	printf '  "test_run": %s\n' "$(json_str "$test_run")"
	printf '}\n'
} >"$vars_file"

color_args=()
[ -t 1 ] || color_args=(-no-color)

# ------------------------------------------------------------------- test
# The suite's first run uses the helper module tests/setup, which the test
# command only finds once installed: `get` installs modules (a local copy,
# nothing downloaded) and, unlike init, leaves the overridden provider alone.
log "running: $(basename "$CLI") get"
"$CLI" -chdir="$work" get "${color_args[@]}" >&2

log "running: $(basename "$CLI") test in a copy of examples/modules/ci-sandbox (host $SANDBOXER_TEST_SSH_USER@$SANDBOXER_TEST_SSH_ADDR, run $test_run)"
rc=0
"$CLI" -chdir="$work" test "${color_args[@]}" -var-file="$vars_file" || rc=$?

# The test command destroys what it created; when that fails it leaves the
# state it could not destroy in errored_test.tfstate.
if [ -e "$work/errored_test.tfstate" ]; then
	rc=1
	log "the test command could not destroy everything; trying once more from errored_test.tfstate"
	cat >"$work/zz_harness_provider.tf" <<-EOF
	provider "sandboxer" {
	  host {
	    name             = "harness"
	    address          = $(json_str "$SANDBOXER_TEST_SSH_ADDR")
	    user             = $(json_str "$SANDBOXER_TEST_SSH_USER")
	    private_key_file = $(json_str "$SANDBOXER_TEST_SSH_KEY")
	    known_hosts_file = $(json_str "$SANDBOXER_TEST_KNOWN_HOSTS")
	  }
	}
	EOF
	"$CLI" -chdir="$work" destroy -auto-approve -no-color -state=errored_test.tfstate \
		-var repo_path=tests/fixtures/app >&2 ||
		log "destroy failed; the sandboxes in $work/errored_test.tfstate may remain on the host"
fi

# ------------------------------------------------------ nothing left behind
if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
	left="$(docker ps -a --filter "label=sandboxer.test.run=$test_run" \
		--format '{{.Names}} ({{.Label "com.docker.compose.project"}}, {{.Status}})')"
	if [ -n "$left" ]; then
		rc=1
		log "containers of this run are still on the host:"
		printf '  %s\n' "$left" >&2
		log "remove them with: docker rm -f \$(docker ps -aq --filter label=sandboxer.test.run=$test_run)"
	else
		log "no containers of run $test_run left on the host"
	fi
else
	log "docker is not reachable from here; not checking the host for leftover containers"
fi

if [ "$rc" = 0 ]; then
	log "PASS: $cli_name ($version_line, $CLI)"
else
	log "FAIL: $cli_name ($version_line, $CLI), exit status $rc"
fi
exit "$rc"
