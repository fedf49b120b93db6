#!/usr/bin/env bash
# check-generated.sh: fails when docs/ is not what scripts/generate-docs.sh
# produces from the current templates/, examples/ and provider schema, i.e.
# when someone changed one of those (or edited docs/ by hand) and did not
# regenerate. For CI and before committing.
#
#   bash scripts/check-generated.sh
#
# It regenerates docs/ in place, so after a failure the working tree holds the
# up-to-date docs: review them with `git diff docs/` and commit them.
# New, untracked files under docs/ count as a difference until they are added.
set -euo pipefail

repo_root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$repo_root/scripts/generate-docs.sh"

# Working tree against the index (staged docs count as current), plus new files.
changes="$(git -C "$repo_root" diff --name-only -- docs/; git -C "$repo_root" ls-files --others --exclude-standard -- docs/)"
if [ -n "$changes" ]; then
	echo >&2
	echo "check-generated.sh: docs/ is out of date with templates/, examples/ or the schema:" >&2
	printf '%s\n' "$changes" >&2
	git -C "$repo_root" --no-pager diff --stat -- docs/ >&2 || true
	echo "Run 'bash scripts/generate-docs.sh' and commit docs/." >&2
	exit 1
fi
echo "check-generated.sh: docs/ is up to date."
