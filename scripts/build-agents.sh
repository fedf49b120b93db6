#!/usr/bin/env bash
# build-agents.sh: builds the standalone checkpoint agent (cmd/sandboxer-agent)
# for Linux on amd64 and arm64, into DIR (default build/agents), named
# sandboxer-agent_<os>_<arch>. The provider installs the one for an SSH
# host's platform in preference to its own executable, and needs it for a
# host whose OS or architecture differs from the machine running Terraform
# (a macOS laptop driving a Linux build host, say). Release archives carry
# them beside the provider, and `make install` (scripts/install-provider.sh)
# puts them there too; for a provider built otherwise, point
# SANDBOXER_AGENT_DIR at DIR.
#
#   bash scripts/build-agents.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-build/agents}"
mkdir -p "$out"
for arch in amd64 arm64; do
	CGO_ENABLED=0 GOOS=linux GOARCH="$arch" go build -trimpath -ldflags '-s -w' \
		-o "$out/sandboxer-agent_linux_$arch" ./cmd/sandboxer-agent
done
ls -l "$out"
