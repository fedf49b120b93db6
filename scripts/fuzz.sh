#!/usr/bin/env bash
# fuzz.sh: runs every fuzz target briefly (a count of inputs each, about 10
# seconds here; $FUZZTIME, as `go test -fuzztime` takes it, for all): the decoders of what comes from
# hosts and users (manifests, profile files, import ids) and the shell
# quoting every host command is built with. `go test -fuzz` takes one target
# per run. Exits non-zero on any failure; a failing input is saved under
# testdata/fuzz/ of its package, where plain `go test` replays it from then
# on.
#
# The default is a count, not a duration: with a duration, Go 1.26's fuzz
# coordinator can report its own deadline as a failure ("context deadline
# exceeded", no failing input; go.dev/issue/75804, fixed in Go 1.27). A
# count has no deadline to race.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(
	"FuzzParseManifest ./internal/checkpoint/ 300000x"
	"FuzzParseProfile ./internal/catalog/ 100000x"
	"FuzzParseImportID ./internal/provider/ 60000x"
	"FuzzQuote ./internal/hosts/ 10000x" # each input runs sh
)
for t in "${targets[@]}"; do
	read -r name pkg count <<<"$t"
	count="${FUZZTIME:-$count}"
	echo "== fuzz $name ($pkg, $count)"
	go test -run '^$' -fuzz "^$name\$" -fuzztime "$count" "$pkg"
done
