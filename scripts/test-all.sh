#!/usr/bin/env bash
# Runs every test on real parts, on a fresh machine or a warm one:
# installs and starts the harness (docker engine, two sshd on loopback),
# obtains Terraform and OpenTofu CLIs (cached), then runs the unit and
# backend tests, and the acceptance tests once with each CLI.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/harness/install.sh
env_file=$(bash scripts/harness/up.sh | tail -n1)
# shellcheck disable=SC1090
source "$env_file"
eval "$(bash scripts/harness/tools.sh | sed 's/^/export /')"

# Absent harness parts fail the tests instead of skipping them.
export SANDBOXER_REQUIRE_HARNESS=1

echo "== unit and backend tests"
go test -p 1 -count=1 ./...

echo "== acceptance tests with Terraform ($TF_ACC_TERRAFORM_PATH)"
TF_ACC=1 go test -p 1 -count=1 -timeout 30m ./internal/provider/...

echo "== acceptance tests with OpenTofu ($SANDBOXER_TOFU_PATH)"
TF_ACC=1 TF_ACC_TERRAFORM_PATH="$SANDBOXER_TOFU_PATH" \
	TF_ACC_PROVIDER_NAMESPACE=hashicorp TF_ACC_PROVIDER_HOST=registry.opentofu.org \
	go test -p 1 -count=1 -timeout 30m ./internal/provider/...

echo "== generated docs are current"
TERRAFORM="$TF_ACC_TERRAFORM_PATH" bash scripts/check-generated.sh
