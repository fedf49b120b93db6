#!/usr/bin/env bash
# demo.sh: the quickstart from start to finish, with the provider built from
# this working tree.
#
#   bash scripts/demo.sh
#
# 1. builds terraform-provider-sandboxer and finds a terraform CLI
#    (scripts/harness/tools.sh; set TERRAFORM=/path/to/terraform to choose one,
#    or TERRAFORM=/path/to/tofu for OpenTofu)
# 2. copies examples/quickstart to a temporary directory and runs
#    `terraform apply` there: a profile.workspace sandbox on the built-in
#    host "local" (no SSH, no docker)
# 3. shows the outputs and the sandbox's workspace directory with the copied app
# 4. runs `terraform destroy` and shows that the workspace directory is gone
#
# Terraform finds the provider through a dev_overrides CLI config
# (TF_CLI_CONFIG_FILE), so there is no `terraform init` and nothing is
# downloaded; Terraform warns about the override on every command, which is
# expected. Sandboxes of the local host normally live under
# ~/.local/share/sandboxer; the demo points XDG_DATA_HOME at its temporary
# directory instead. Everything it creates (state, sandboxes, the binary) is
# removed on exit, even when a step fails.
set -euo pipefail

# shellcheck source=scripts/lib/devprovider.sh
. "$(dirname "$0")/lib/devprovider.sh"

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
if [ ! -t 1 ]; then
	step() { printf '\n==> %s\n' "$*"; }
fi

# Terraform colours its output unless told not to; plain text when piped.
color_args=()
[ -t 1 ] || color_args=(-no-color)

step "Building the provider and finding a terraform CLI"
devprovider_setup

work="$(devprovider_tmpdir quickstart)"
cp -R "$REPO_ROOT/examples/quickstart/." "$work/"
export XDG_DATA_HOME
XDG_DATA_HOME="$(devprovider_tmpdir data)"
echo "Working directory: $work (a copy of examples/quickstart)"
echo "Sandboxes of host \"local\" go under: $XDG_DATA_HOME/sandboxer"

tf() { "$TERRAFORM" -chdir="$work" "$@"; }

# Should a later step fail, still tear down whatever apply created.
applied=0
teardown_on_failure() {
	if [ "$applied" = 1 ]; then
		echo "demo.sh: cleaning up: terraform destroy" >&2
		tf destroy -auto-approve -no-color >/dev/null 2>&1 || true
	fi
}
devprovider_on_exit teardown_on_failure

step "terraform apply: create the sandbox"
applied=1
tf apply -auto-approve "${color_args[@]}"

step "terraform output"
tf output "${color_args[@]}"

ws="$(tf output -raw workspace_dir)"
step "The workspace directory exists and holds a copy of examples/quickstart/app"
ls -la "$ws"
echo
echo "--- $ws/README.txt"
cat "$ws/README.txt"
echo "--- sh $ws/hello.sh"
(cd "$ws" && sh ./hello.sh)

step "terraform destroy: remove the sandbox"
tf destroy -auto-approve "${color_args[@]}"
applied=0

step "The workspace directory is gone"
if [ -e "$ws" ]; then
	echo "ERROR: $ws still exists after terraform destroy" >&2
	exit 1
fi
echo "$ws: no longer exists."
echo
echo "Done. Next: read examples/quickstart/main.tf, then docs/index.md and docs/resources/sandbox.md."
