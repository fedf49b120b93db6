#!/usr/bin/env bash
# Runs every test on real parts, on a fresh machine or a warm one:
# installs and starts the harness (docker engine, two sshd on loopback, a
# non-root user in the docker group, a three-node swarm, a one-node
# Kubernetes cluster), obtains Terraform, OpenTofu and docker
# compose v2 (cached), then runs the unit and backend tests, the acceptance
# tests once with each CLI (compose v2, the host's default; the host's own
# tests with Terraform only), an upgrade from
# the newest release with each CLI (its state planned empty), the actions and
# identities on a Terraform >= 1.14 built for them, the compose
# tests again on compose v1, the README's example as written, `make install`
# and a release (goreleaser snapshot) installed as users install them, and the
# ci-sandbox module's `terraform test` and `tofu test`, a short fault soak;
# golangci-lint,
# actionlint, the scripts' own lint and a short run of every fuzz target too.
set -euo pipefail
cd "$(dirname "$0")/.."

# section TITLE: starts a section, saying how long the one before took (the
# run's time is where CI's limit is felt).
section_start=$SECONDS
section() {
	echo "   ($((SECONDS - section_start)) s)"
	section_start=$SECONDS
	echo "== $*"
}

bash scripts/harness/install.sh
env_file=$(bash scripts/harness/up.sh | tail -n1)
# shellcheck disable=SC1090
source "$env_file"
# A three-node Docker Swarm (network namespaces on this machine) for the
# ext.swarm tests; the tests read its env file themselves.
bash scripts/harness/swarm.sh up >/dev/null
# A one-node Kubernetes cluster (a network namespace and a containerd of its
# own) for ext.compose-k8s; built once into the tools cache (~10 minutes
# cold), up in ~10 s after that.
bash scripts/harness/cluster.sh up >/dev/null
# A failed tool build stops here, with the tail of its log (tools.sh prints it).
tools_out="$(bash scripts/harness/tools.sh all)" || { echo "test-all.sh: ERROR: obtaining the CLIs failed (see above)" >&2; exit 1; }
eval "$(printf '%s\n' "$tools_out" | sed 's/^/export /')"
# A CLI config named in the environment but missing makes both CLIs print a
# warning where the test framework expects their version.
if [ -n "${TF_CLI_CONFIG_FILE:-}" ] && [ ! -f "$TF_CLI_CONFIG_FILE" ]; then unset TF_CLI_CONFIG_FILE; fi

# What an interrupted earlier run left in the engine (nothing runs yet).
bash scripts/harness/sweep.sh

# Absent harness parts fail the tests instead of skipping them.
export SANDBOXER_REQUIRE_HARNESS=1
unset SANDBOXER_COMPOSE_CMD

# golangci-lint (.golangci.yml) over every package.
lint_pkgs=(./...)
section "lint: golangci-lint ${lint_pkgs[*]}"
"$SANDBOXER_GOLANGCI_LINT" run "${lint_pkgs[@]}"
section "lint: actionlint (.github/workflows)"
"$SANDBOXER_ACTIONLINT"
section "lint: scripts (scripts/lint-scripts.sh)"
bash scripts/lint-scripts.sh

section "unit and backend tests (compose: $(docker compose version --short))"
# The provider package's tests, its unit tests too, run in both acceptance
# passes below.
# shellcheck disable=SC2046 # one package a word
go test -p 1 -count=1 $(go list ./... | grep -v '/internal/provider$')

section "the transport and the per-host helper under the race detector"
go test -race -count=1 ./internal/hosts/
go test -race -count=1 -run 'Flight|Create' ./internal/backends/

section "fuzz targets, briefly (seeded; scripts/fuzz.sh)"
bash scripts/fuzz.sh

section "acceptance tests with Terraform ($TF_ACC_TERRAFORM_PATH)"
TF_ACC=1 go test -p 1 -count=1 -timeout 45m ./internal/provider/...

# The tests whose subject is the host and not what the CLI does with the
# provider's answers run with Terraform only: an engine under load or
# restarted, the kernel's limits, a swarm's and a cluster's scheduling, the
# host inventory (ADR 0013). Every test of the resources' lifecycle, plans,
# imports and failures part-way runs with both CLIs.
host_only='TestAccSandbox_fortyComposeSandboxes|TestAccSandbox_dockerdRestartedMidApply|TestAccSandbox_composeLimitsProtectNeighbours|TestAccSwarm_|TestAccSandbox_composeOnCluster|TestAccSandbox_poolMixesHostsAndClusters|TestAccInventory_'
section "acceptance tests with OpenTofu ($SANDBOXER_TOFU_PATH), but the host's own: $host_only"
TF_ACC=1 TF_ACC_TERRAFORM_PATH="$SANDBOXER_TOFU_PATH" \
	TF_ACC_PROVIDER_NAMESPACE=hashicorp TF_ACC_PROVIDER_HOST=registry.opentofu.org \
	go test -p 1 -count=1 -timeout 45m -skip "$host_only" ./internal/provider/...

section "upgrade from the newest release in scripts/upgrade/releases, with Terraform and OpenTofu"
bash scripts/test-upgrade.sh "$TF_ACC_TERRAFORM_PATH" "$SANDBOXER_TOFU_PATH"

# The features only newer CLIs have (actions: Terraform >= 1.14; resource
# identities: >= 1.12), on a Terraform built for them (natives.sh, cached).
natives_out="$(bash scripts/harness/natives.sh)" || { echo "test-all.sh: ERROR: building Terraform for the native features failed (see above)" >&2; exit 1; }
eval "$(printf '%s\n' "$natives_out" | sed 's/^/export /')"
section "Terraform >= 1.14 features with $("$SANDBOXER_TERRAFORM_NATIVES" version | sed -n 1p)"
TF_ACC=1 TF_ACC_TERRAFORM_PATH="$SANDBOXER_TERRAFORM_NATIVES" go test -p 1 -count=1 -timeout 15m \
	-run 'TestAccActions|TestUnitActions|TestAccList|TestUnitIdentity|TestImportIdentity' ./internal/provider/...

section "compose tests again on compose v1 ($(docker-compose version --short))"
# A cluster or a swarm runs no compose CLI: their tests ran above, once is
# enough.
# shellcheck disable=SC2046 # one package a word
SANDBOXER_COMPOSE_CMD=docker-compose go test -p 1 -count=1 $(go list ./internal/backends/... | grep -v '/composek8s$\|/swarm$')
SANDBOXER_COMPOSE_CMD=docker-compose TF_ACC=1 go test -p 1 -count=1 -timeout 45m \
	-run 'TestAccSandbox_compose|TestAccSandbox_nonRoot|TestAccCheckpoint_tutorial|TestAccCheckpoint_volumes' -skip 'OnCluster' ./internal/provider/...

section "the README's example, applied as written"
TERRAFORM="$TF_ACC_TERRAFORM_PATH" bash scripts/test-readme.sh
TERRAFORM="$SANDBOXER_TOFU_PATH" bash scripts/test-readme.sh

section "make install, then init, a rebuild and init -upgrade with both CLIs"
bash scripts/test-install.sh

section "a release (goreleaser snapshot, this platform) installed from a registry and a filesystem mirror with both CLIs"
bash scripts/test-release.sh

section "the ci-sandbox module's own tests"
bash scripts/test-module.sh "$TF_ACC_TERRAFORM_PATH"
bash scripts/test-module.sh "$SANDBOXER_TOFU_PATH"

section "a short fault soak (scripts/soak.sh; a fixed seed, so a failure replays)"
TERRAFORM="$TF_ACC_TERRAFORM_PATH" bash scripts/soak.sh --minutes 2 --seed 20261128
# It kills and restarts dockerd: what ran in the engine before is as the
# soak's heal left it; the steps below need only the engine answering.

section "generated docs are current"
TERRAFORM="$TF_ACC_TERRAFORM_PATH" bash scripts/check-generated.sh
section "done in $SECONDS s"
