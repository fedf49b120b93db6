#!/usr/bin/env bash
# Removes what test runs cut off part-way (a killed CI job, a stopped
# machine) left in the docker engine: the containers, networks and volumes
# of sandboxes (compose projects sbx-*) whose working directory is a Go
# test's temporary directory, and those directories. The acceptance tests'
# "destroy left nothing" checks would otherwise count them. Run it only when
# no test is running (scripts/test-all.sh runs it before the tests).
set -euo pipefail

tmp="${TMPDIR:-/tmp}"
docker ps -a --filter label=com.docker.compose.project \
	--format '{{.Label "com.docker.compose.project"}} {{.Label "com.docker.compose.project.working_dir"}}' |
	sort -u | while read -r project dir; do
	case "$project $dir" in
	"sbx-"*" $tmp/Test"*) ;;
	*) continue ;;
	esac
	echo "sweep.sh: removing $project, left by an interrupted test run in $dir" >&2
	f="label=com.docker.compose.project=$project"
	docker ps -aq --filter "$f" | xargs -r docker rm -f -v >/dev/null
	docker network ls -q --filter "$f" | xargs -r docker network rm >/dev/null
	docker volume ls -q --filter "$f" | xargs -r docker volume rm -f >/dev/null
	# The test's own temporary directory (/tmp/TestName123/), which its
	# killed process could not remove.
	testdir="${dir%%/[0-9][0-9][0-9]/*}"
	case "$testdir" in "$tmp/Test"*/*) ;; "$tmp/Test"*) rm -rf -- "$testdir" ;; esac
done
