#!/usr/bin/env bash
# Fails on a pipeline that can kill a script by SIGPIPE. Under
# `set -o pipefail`, a reader that quits early (`head`, `grep -q`, `grep -m`,
# `awk` with `exit`) leaves the writer before it to die of SIGPIPE if it writes
# after that, and the pipeline then fails with 141 although the reader found
# what it wanted. Whether it does depends on timing: `tofu version | head -n1`
# failed a whole run this way. Readers that read to the end (`sed -n 1p`,
# `grep ... >/dev/null`, `awk` without `exit`) never do.
set -euo pipefail
cd "$(dirname "$0")/.."

bad=0
while IFS= read -r f; do
	grep -q 'pipefail' "$f" || continue
	# Comment lines aside (this file's own say what they look for).
	if grep -nE '\|[[:space:]]*(head([[:space:]]|$)|grep[[:space:]]+(-[a-zA-Z]*[qm]|--quiet|--max-count)|awk[^|]*[{;[:space:]]exit[[:space:]]*[};])' "$f" | grep -vE '^[0-9]+:[[:space:]]*#' >"${TMPDIR:-/tmp}/lint-scripts.$$"; then
		sed "s|^|$f:|" "${TMPDIR:-/tmp}/lint-scripts.$$" >&2
		bad=1
	fi
done < <(git ls-files '*.sh' .ci/run)
rm -f "${TMPDIR:-/tmp}/lint-scripts.$$"
[ "$bad" = 0 ] || { echo "lint-scripts.sh: a reader that quits early ends a pipeline under pipefail (above): read to the end instead (sed -n 1p, grep ... >/dev/null)" >&2; exit 1; }
echo "lint-scripts.sh: no pipeline under pipefail ends in a reader that quits early"
