# shellcheck shell=bash
# Sourced, not run: shared by scripts/demo.sh, scripts/generate-docs.sh and
# scripts/lib/bench.sh (the benchmarks).
#
# Builds terraform-provider-sandboxer from this working tree and points the
# Terraform CLI at that binary through a dev_overrides CLI config, so nothing
# is downloaded from a registry and `terraform init` is not needed (with
# dev_overrides, plan/apply/destroy/providers schema run without it).
#
#   devprovider_setup          build the provider, find terraform, write the CLI config
#   devprovider_tmpdir NAME    create and print $DEVPROVIDER_TMP/NAME
#   devprovider_on_exit CMD    run CMD (a function name, with arguments) on exit,
#                              before the scratch directory is removed
#
# After devprovider_setup:
#   REPO_ROOT            the repository root
#   TERRAFORM            the terraform CLI (scripts/harness/tools.sh finds or builds
#                        it; set TERRAFORM yourself to use another one)
#   DEVPROVIDER_TMP      scratch directory, removed with everything in it on exit
#   DEVPROVIDER_BIN      directory holding the freshly built provider binary
#   TF_CLI_CONFIG_FILE   exported: the dev_overrides CLI config
#   CHECKPOINT_DISABLE   exported: no update check against checkpoint.hashicorp.com
#
# It installs the EXIT trap itself; callers register clean-up work with
# devprovider_on_exit rather than their own trap.

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# The source address users write; the dev override must name the same one.
DEVPROVIDER_SOURCE="sand-boxer/sandboxer"
DEVPROVIDER_TMP=""
DEVPROVIDER_BIN=""
_devprovider_exit_cmds=()

devprovider_log() { printf '%s\n' "$*" >&2; }

devprovider_on_exit() { _devprovider_exit_cmds+=("$*"); }

_devprovider_exit() {
	local rc=$? i
	trap - EXIT
	# Last registered runs first; a failing hook does not stop the others.
	for ((i = ${#_devprovider_exit_cmds[@]} - 1; i >= 0; i--)); do
		eval "${_devprovider_exit_cmds[$i]}" || true
	done
	if [ -n "$DEVPROVIDER_TMP" ] && [ -d "$DEVPROVIDER_TMP" ]; then
		rm -rf -- "$DEVPROVIDER_TMP"
	fi
	exit "$rc"
}

devprovider_tmpdir() {
	local dir="$DEVPROVIDER_TMP/$1"
	mkdir -p -- "$dir"
	printf '%s\n' "$dir"
}

devprovider_setup() {
	DEVPROVIDER_TMP="$(mktemp -d "${TMPDIR:-/tmp}/sandboxer.XXXXXX")"
	trap _devprovider_exit EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	DEVPROVIDER_BIN="$(devprovider_tmpdir bin)"

	devprovider_log "Building the provider from $REPO_ROOT ..."
	(cd "$REPO_ROOT" && go build -o "$DEVPROVIDER_BIN/terraform-provider-sandboxer" .)

	TF_CLI_CONFIG_FILE="$DEVPROVIDER_TMP/terraform.tfrc"
	cat >"$TF_CLI_CONFIG_FILE" <<-HCL
	provider_installation {
	  dev_overrides {
	    "$DEVPROVIDER_SOURCE" = "$DEVPROVIDER_BIN"
	  }
	  direct {}
	}
	HCL
	# Exported before tools.sh runs terraform, so every terraform call sees it.
	export TF_CLI_CONFIG_FILE CHECKPOINT_DISABLE=1

	# `tools.sh terraform` finds (or builds) a terraform CLI only, honouring
	# $TERRAFORM, and prints TF_ACC_TERRAFORM_PATH=...
	local tools_out
	tools_out="$(bash "$REPO_ROOT/scripts/harness/tools.sh" terraform)"
	TERRAFORM="$(printf '%s\n' "$tools_out" | sed -n 's/^TF_ACC_TERRAFORM_PATH=//p')"
	if [ -z "$TERRAFORM" ] || [ ! -x "$TERRAFORM" ]; then
		devprovider_log "ERROR: scripts/harness/tools.sh did not report a terraform CLI"
		return 1
	fi
	devprovider_log "Using $("$TERRAFORM" version | head -n1) at $TERRAFORM"
}
