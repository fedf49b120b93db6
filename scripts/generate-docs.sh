#!/usr/bin/env bash
# generate-docs.sh: renders docs/ from templates/ and examples/ with
# tfplugindocs (pinned in go.mod through tools/tools.go).
#
#   bash scripts/generate-docs.sh
#
# Works offline. tfplugindocs would normally build the provider, install
# Terraform (downloading it when none is on PATH) and run `terraform init`;
# instead this script builds the provider itself, asks Terraform for the
# schema through a dev_overrides CLI config (scripts/lib/devprovider.sh; no
# init needed) and hands the JSON to `tfplugindocs generate --providers-schema`,
# which then neither builds nor calls Terraform.
#
# The schema is read with a Terraform that knows actions (>= 1.14:
# $SANDBOXER_TERRAFORM_NATIVES, else scripts/harness/natives.sh builds it
# once, ~3 min), so docs/actions/ is rendered too; older CLIs leave the
# action schemas out.
#
# docs/ is generated: never edit it by hand. Edit templates/, examples/ or the
# schema's MarkdownDescription, then run this script.
set -euo pipefail

# shellcheck source=scripts/lib/devprovider.sh
. "$(dirname "$0")/lib/devprovider.sh"

devprovider_setup

schema_dir="$(devprovider_tmpdir schema)"
cat >"$schema_dir/main.tf" <<HCL
terraform {
  required_providers {
    sandboxer = {
      source = "$DEVPROVIDER_SOURCE"
    }
  }
}
HCL

devprovider_log "Reading the provider schema ..."
if [ -z "${SANDBOXER_TERRAFORM_NATIVES:-}" ]; then
	SANDBOXER_TERRAFORM_NATIVES="$(bash "$REPO_ROOT/scripts/harness/natives.sh" | sed -n 's/^SANDBOXER_TERRAFORM_NATIVES=//p')"
fi
[ -x "$SANDBOXER_TERRAFORM_NATIVES" ] || { devprovider_log "ERROR: no Terraform >= 1.14 to read the action schemas with"; exit 1; }
devprovider_log "Schema read with $("$SANDBOXER_TERRAFORM_NATIVES" version | sed -n 1p) ($SANDBOXER_TERRAFORM_NATIVES): older CLIs leave out actions and list resources"
"$SANDBOXER_TERRAFORM_NATIVES" -chdir="$schema_dir" providers schema -json >"$schema_dir/schema.raw.json"

# tfplugindocs looks the schema up under the provider's short name (or under
# registry.terraform.io/hashicorp/NAME), not under our registry address
# (registry.terraform.io/..., or registry.opentofu.org/... when $TERRAFORM is tofu).
sed -E "s|\"provider_schemas\":\{\"[a-z0-9.-]+/$DEVPROVIDER_SOURCE\":|\"provider_schemas\":{\"sandboxer\":|" \
	"$schema_dir/schema.raw.json" >"$schema_dir/schema.json"
if ! grep -q '"provider_schemas":{"sandboxer":' "$schema_dir/schema.json"; then
	devprovider_log "ERROR: no schema for $DEVPROVIDER_SOURCE in the output of 'terraform providers schema -json'"
	exit 1
fi

# tfplugindocs is chatty; its output is shown only when it fails.
tfplugindocs() {
	local out="$DEVPROVIDER_TMP/tfplugindocs.log"
	if ! (cd "$REPO_ROOT" && go run github.com/hashicorp/terraform-plugin-docs/cmd/tfplugindocs "$@") >"$out" 2>&1; then
		cat "$out" >&2
		devprovider_log "ERROR: tfplugindocs $1 failed"
		return 1
	fi
}

devprovider_log "Rendering docs/ from templates/ and examples/ ..."
tfplugindocs generate \
	--provider-name sandboxer \
	--rendered-provider-name Sandboxer \
	--providers-schema "$schema_dir/schema.json"

devprovider_log "Validating docs/ ..."
tfplugindocs validate \
	--provider-name sandboxer \
	--providers-schema "$schema_dir/schema.json"

devprovider_log "Done: docs/ regenerated and validated."
