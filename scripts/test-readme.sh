#!/usr/bin/env bash
# test-readme.sh: applies the README's example as written, with a real CLI
# and a provider built from this working tree, against the harness host.
#
#   TERRAFORM=/path/to/terraform-or-tofu bash scripts/test-readme.sh
#
# The README's first ```hcl block becomes main.tf unchanged. Where "build1"
# is comes from the harness through a Terraform override file
# (harness_override.tf: address, user, root_dir), the way a user points a
# configuration at a test host; its key and known_hosts paths stay "~/..."
# and are found in a HOME this script sets up. ./app is a two-service
# compose stack. Then: apply, check what it made (both sandboxes ready,
# services known, the token in the workspace .env and nowhere in state),
# destroy, check that nothing is left on the host.
set -euo pipefail

# shellcheck source=scripts/lib/devprovider.sh
. "$(dirname "$0")/lib/devprovider.sh"

die() { echo "test-readme.sh: ERROR: $*" >&2; exit 1; }

env_file="${SANDBOXER_HARNESS_DIR:-$HOME/.cache/sandboxer-harness}/env"
if [ -z "${SANDBOXER_TEST_SSH_ADDR:-}" ]; then
	[ -r "$env_file" ] || die "harness not up: run bash scripts/harness/up.sh"
	# shellcheck disable=SC1090
	. "$env_file"
fi

devprovider_setup
work="$(devprovider_tmpdir readme)"
root="$(devprovider_tmpdir root)"
home="$(devprovider_tmpdir home)"

awk '/^```hcl$/ { on = 1; next } on && /^```$/ { exit } on' "$REPO_ROOT/README.md" >"$work/main.tf"
grep -q 'private_key_file = "~/.ssh/id_ed25519"' "$work/main.tf" || die "README example not found or changed shape"
mkdir -p "$work/app" "$home/.ssh"
cat >"$work/app/docker-compose.yml" <<EOF
services:
  worker:
    image: $SANDBOXER_TEST_IMAGE
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
  web:
    image: $SANDBOXER_TEST_IMAGE
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
EOF
cat >"$work/harness_override.tf" <<EOF
provider "sandboxer" {
  host {
    name             = "build1"
    address          = "$SANDBOXER_TEST_SSH_ADDR"
    user             = "$SANDBOXER_TEST_SSH_USER"
    private_key_file = "~/.ssh/id_ed25519"
    known_hosts_file = "~/.ssh/known_hosts"
    root_dir         = "$root"
  }
}
EOF
install -m 600 "$SANDBOXER_TEST_SSH_KEY" "$home/.ssh/id_ed25519"
install -m 600 "$SANDBOXER_TEST_KNOWN_HOSTS" "$home/.ssh/known_hosts"
export HOME="$home" # also where host "local" keeps the scratch sandbox

token="readme-token-$$-$RANDOM"
tf() { "$TERRAFORM" -chdir="$work" "$@"; }
applied=0
teardown() { [ "$applied" = 0 ] || tf destroy -auto-approve -no-color -var "api_token=$token" >/dev/null 2>&1 || true; }
devprovider_on_exit teardown

applied=1
tf apply -auto-approve -no-color -var "api_token=$token"
[ "$(tf output -no-color -json services)" = '["web","worker"]' ] || die "services output: $(tf output -json services)"
state="$(tf show -json)"
for r in e2e scratch; do
	echo "$state" | grep "\"address\":\"sandboxer_sandbox.$r\"" >/dev/null || die "sandboxer_sandbox.$r not in state"
done
[ "$(echo "$state" | grep -o '"status":"ready"' | wc -l)" = 2 ] || die "not both sandboxes are ready"
ws="$(tf state show -no-color sandboxer_sandbox.e2e | sed -n 's/^ *workspace_dir *= *"\(.*\)"$/\1/p')"
grep -qx "API_TOKEN=$token" "$ws/.env" || die "the token is not in $ws/.env"
if grep -rqF -- "$token" "$work"/*.tfstate* 2>/dev/null || echo "$state" | grep -F -- "$token" >/dev/null; then
	die "the env_wo token is in the state"
fi

tf destroy -auto-approve -no-color -var "api_token=$token"
applied=0
left="$(find "$root" "$home/.local/share/sandboxer" -mindepth 1 -maxdepth 1 ! -name .sandboxer 2>/dev/null; find "$root/.sandboxer/sandboxes" -type f 2>/dev/null)"
[ -z "$left" ] || die "destroy left: $left"
[ -z "$(docker ps -aq --filter "label=com.docker.compose.project.working_dir=$ws")" ] || die "destroy left containers of $ws"
echo "test-readme.sh: PASS: the README example applied and destroyed cleanly with $("$TERRAFORM" version | awk '/^(Terraform|OpenTofu) v/ && !n++')"
