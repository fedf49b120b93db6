#!/bin/sh
# sandboxer-reaper v1
# Tears down the sandboxes of one root directory whose expiry has passed,
# using the record each sandbox leaves in <root>/.sandboxer/sandboxes. Runs
# from cron, or by hand: `sh reaper.sh [ROOT]`; prints one line per sandbox
# it removed. Touches nothing without a record: no record, no action.
set -u
root=${1:-@ROOT@}
now=$(date -u +%Y-%m-%dT%H:%M:%S)

# field NAME FILE: a string field of a record (written one field per line).
field() {
	sed -n "s/^  \"$1\": \"\\([^\"\\\\]*\\)\",\\{0,1\\}\$/\\1/p" "$2" | head -n 1
}

for rec in "$root"/.sandboxer/sandboxes/*.json; do
	[ -f "$rec" ] || continue
	id=$(field id "$rec")
	exp=$(field expires_at "$rec")
	ws=$(field workspace_dir "$rec")
	project=$(field compose_project "$rec")
	case "$id" in "" | *[!a-z0-9-]*) continue ;; esac
	[ "$(basename "$rec")" = "$id.json" ] || continue
	[ -n "$exp" ] || continue # no ttl: never reaped
	exp=$(printf '%s' "$exp" | cut -c1-19)
	[ "$(printf '%s\n%s\n' "$exp" "$now" | sort | head -n 1)" = "$exp" ] && [ "$exp" != "$now" ] || continue
	if [ -n "$project" ]; then
		case "$project" in *[!a-z0-9-]*) continue ;; esac
		for cli in docker podman; do
			command -v "$cli" >/dev/null 2>&1 || continue
			f="label=com.docker.compose.project=$project"
			ids=$($cli ps -aq --filter "$f"); [ -z "$ids" ] || $cli rm -f -v $ids >/dev/null
			ids=$($cli network ls -q --filter "$f"); [ -z "$ids" ] || $cli network rm $ids >/dev/null
			ids=$($cli volume ls -q --filter "$f"); [ -z "$ids" ] || $cli volume rm -f $ids >/dev/null
			break
		done
	fi
	case "$ws" in
	*/"$id" | */sbx-"$id") rm -rf -- "$ws" ;;
	esac
	rm -f -- "$rec" # last: a reaper that dies midway retries next run
	echo "reaped $id (expired $exp)"
done
