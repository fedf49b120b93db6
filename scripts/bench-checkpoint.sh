#!/usr/bin/env bash
# bench-checkpoint.sh: measures the checkpoint store (internal/checkpoint)
# against its speed bars, side by side with the tools it replaces, in one run:
#
#   1. full capture of the workspace      <= 1.0x `tar -c | gzip -1` of it
#   2. capture after 1% of files changed  <= 0.1x the full capture,
#                                            StoredBytes <= 1.1x the changed bytes
#   3. restore into a new empty directory <= 1.0x `tar -x` of an uncompressed tar
#
# It generates a deterministic workspace (default: 20,000 files, 1 GiB, in
# nested directories, half compressible) in a scratch directory, times every
# operation warm (one untimed warm-up, then the median of 3 runs) and prints a
# table of seconds, ratios, bars and PASS/FAIL. See docs/benchmarks.md.
#
#   bash scripts/bench-checkpoint.sh                  # full size: 2-5 minutes on 2 cores
#   SANDBOXER_BENCH_FILES=2000 SANDBOXER_BENCH_BYTES=100M bash scripts/bench-checkpoint.sh   # quick
#   SANDBOXER_BENCH_STRICT=1 bash scripts/bench-checkpoint.sh   # exit 1 when a bar is missed
#
# Further settings (SANDBOXER_BENCH_RUNS, _CHANGED, _SEED, _WORKERS, _DIR,
# _KEEP) are described at the top of internal/checkpoint/bench_test.go.
# Extra arguments go to `go test` (e.g. -cpuprofile cpu.out).
#
# Needs GNU tar, gzip and ~15 GiB free on the scratch filesystem (the system
# temp dir, or SANDBOXER_BENCH_DIR); the store and the workspaces share it.
# Other load on the host skews the numbers: the table's last column shows how
# many CPUs other processes kept busy while each operation was timed.
set -euo pipefail
cd "$(dirname "$0")/.."

export SANDBOXER_BENCH=1
export SANDBOXER_BENCH_FILES="${SANDBOXER_BENCH_FILES:-20000}"
export SANDBOXER_BENCH_BYTES="${SANDBOXER_BENCH_BYTES:-1G}"

# go test -v adds its own RUN/PASS lines around the report; drop them.
go test -run '^TestCheckpointSpeedBars$' -count=1 -v -timeout 3h "$@" ./internal/checkpoint/ |
	grep -v -E '^(=== RUN|--- PASS|PASS$|ok  )'
