#!/usr/bin/env bash
# fuzz.sh: runs every fuzz target for a short time ($FUZZTIME, default 10s
# each): the decoders of what comes from hosts and users (manifests, profile
# files, import ids) and the shell quoting every host command is built with.
# `go test -fuzz` takes one target per run. Exits non-zero on any failure;
# a failing input is saved under testdata/fuzz/ of its package, where plain
# `go test` replays it from then on.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME="${FUZZTIME:-10s}"
targets=(
	"FuzzParseManifest ./internal/checkpoint/"
	"FuzzParseProfile ./internal/catalog/"
	"FuzzParseImportID ./internal/provider/"
	"FuzzQuote ./internal/hosts/"
)
for t in "${targets[@]}"; do
	read -r name pkg <<<"$t"
	echo "== fuzz $name ($pkg, $FUZZTIME)"
	go test -run '^$' -fuzz "^$name\$" -fuzztime "$FUZZTIME" "$pkg"
done
