#!/bin/sh
# sandboxer-reaper v7
# Tears down the sandboxes of one root directory whose expiry has passed, and
# those whose create was abandoned (never ready, create deadline passed),
# using the record each sandbox leaves in <root>/.sandboxer/sandboxes; an
# expired one whose record says on_expiry "stop" is stopped instead (its
# containers, or its swarm services scaled to 0), everything else kept.
# Runs from cron, or by hand: `sh reaper.sh [ROOT]`; prints one line per
# sandbox it removed or stopped. Touches nothing without a record: no
# record, no action.
set -u
# The installer puts the root directory here as one quoted shell
# word, on a line of its own: no character of the path is ever code.
default_root=@ROOT@
root=${1:-$default_root}
# Workspaces are recorded resolved (pwd -P); compare against the same form.
root=$(cd -- "$root" && pwd -P) || exit 1
now=$(date -u +%Y-%m-%dT%H:%M:%S)

# field NAME FILE: a string field of a record (written one field per line).
field() {
	sed -n "s/^  \"$1\": \"\\([^\"\\\\]*\\)\",\\{0,1\\}\$/\\1/p" "$2" | head -n 1
}

for rec in "$root"/.sandboxer/sandboxes/*.json; do
	[ -f "$rec" ] || continue
	id=$(field id "$rec")
	exp=$(field expires_at "$rec")
	ready=$(field ready_at "$rec")
	deadline=$(field create_deadline "$rec")
	ws=$(field workspace_dir "$rec")
	project=$(field compose_project "$rec")
	ext=$(field extension "$rec")
	onexpiry=$(field on_expiry "$rec")
	case "$id" in "" | *[!a-z0-9-]*) continue ;; esac
	[ "$(basename "$rec")" = "$id.json" ] || continue
	# The workspace rule of records.go (workspaceAllowed): clean, absolute,
	# named for the id, inside the root (not its .sandboxer) or, for
	# ext.vm-packer, an sbx-<id> anywhere but around the root. A record
	# breaking it is not acted on at all.
	ok=
	case "$ws" in
	"") ok=1 ;;
	*/../* | */.. | */./* | */. | *//* | */ | "$root"/.sandboxer/*) ;;
	"$root"/"$id" | "$root"/sbx-"$id" | "$root"/*/"$id" | "$root"/*/sbx-"$id") ok=1 ;;
	/*/sbx-"$id")
		if [ "$ext" = ext.vm-packer ]; then
			case "$root/" in "$ws"/*) ;; *) ok=1 ;; esac
		fi
		;;
	esac
	if [ -z "$ok" ]; then
		echo "skipped $id: record $rec names workspace $ws outside its root directory" >&2
		continue
	fi
	# Due at its expiry; a create never finished is due at its deadline.
	# (Times are UTC RFC 3339; their first 19 characters sort as times.)
	why="expired $exp"
	if [ -z "$ready" ] && [ -n "$deadline" ]; then
		d=$(printf '%s' "$deadline" | cut -c1-19)
		if [ -z "$exp" ] || [ "$(printf '%s\n%s\n' "$d" "$(printf '%s' "$exp" | cut -c1-19)" | sort | head -n 1)" = "$d" ]; then
			exp=$deadline why="abandoned create, deadline $deadline"
		fi
	fi
	[ -n "$exp" ] || continue # no ttl: never reaped
	exp=$(printf '%s' "$exp" | cut -c1-19)
	[ "$(printf '%s\n%s\n' "$exp" "$now" | sort | head -n 1)" = "$exp" ] && [ "$exp" != "$now" ] || continue
	if [ "$onexpiry" = stop ] && [ -n "$ready" ]; then
		# Stopped, not destroyed: the workspace, volumes, networks and
		# record stay; a stopped stack is left as it is.
		stopped=
		if [ "$ext" = ext.swarm ]; then
			f="label=com.docker.stack.namespace=sbx-$id"
			# Those not at 0 replicas yet ("0/0" once scaled down).
			if svcs=$(docker service ls --filter "$f" --format '{{.Name}}=0 {{.Replicas}}'); then
				svcs=$(printf '%s\n' "$svcs" | grep -v ' 0/0' | cut -d' ' -f1)
				if [ -z "$svcs" ]; then
					stopped=0
				elif docker service scale --detach=true $svcs >/dev/null 2>&1; then
					stopped=1
				fi
			fi
		elif [ -n "$project" ]; then
			case "$project" in *[!a-z0-9-]*) continue ;; esac
			for cli in docker podman; do
				command -v "$cli" >/dev/null 2>&1 || continue
				ids=$($cli ps -q --filter "label=com.docker.compose.project=$project") || break
				[ -n "$ids" ] || { stopped=0; break; }
				$cli stop $ids >/dev/null && stopped=1
				break
			done
		fi
		case "$stopped" in
		1) echo "stopped $id ($why)" ;;
		0) ;;
		*) echo "skipped $id: its services could not be stopped" >&2 ;;
		esac
		continue
	fi
	if [ "$ext" = ext.swarm ]; then
		# A swarm stack (backends/swarm): removed through the manager this
		# host is, by the name the id gives it, and waited for (a minute at
		# most; the next run tries again). Volumes go once no container of
		# the stack is left.
		f="label=com.docker.stack.namespace=sbx-$id"
		gone=
		n=0
		while [ "$n" -lt 60 ]; do
			objects=$(docker service ls -q --filter "$f" && docker network ls -q --filter "$f" &&
				docker secret ls -q --filter "$f" && docker config ls -q --filter "$f") || break
			containers=$(docker ps -aq --filter "$f") || break
			if [ -z "$objects" ] && [ -z "$containers" ]; then
				vols=$(docker volume ls -q --filter "$f") || break
				[ -z "$vols" ] || docker volume rm -f $vols >/dev/null 2>&1
				vols=$(docker volume ls -q --filter "$f") || break
				[ -n "$vols" ] || gone=1
				break
			elif [ -z "$objects" ]; then
				docker rm -f -v $containers >/dev/null 2>&1
			else
				docker stack rm "sbx-$id" >/dev/null 2>&1
			fi
			n=$((n + 1))
			sleep 1
		done
		if [ -z "$gone" ]; then
			echo "skipped $id: docker did not answer, or the swarm stack sbx-$id is not gone yet" >&2
			continue
		fi
	elif [ -n "$project" ]; then
		case "$project" in *[!a-z0-9-]*) continue ;; esac
		# An engine that does not answer (stopped, restarting) lists
		# nothing: each listing must succeed and nothing may remain, or
		# the workspace and record stay for the next run.
		gone=1
		for cli in docker podman; do
			command -v "$cli" >/dev/null 2>&1 || continue
			f="label=com.docker.compose.project=$project"
			gone=
			ids=$($cli ps -aq --filter "$f") || break
			[ -z "$ids" ] || $cli rm -f -v $ids >/dev/null
			ids=$($cli network ls -q --filter "$f") || break
			[ -z "$ids" ] || $cli network rm $ids >/dev/null
			ids=$($cli volume ls -q --filter "$f") || break
			[ -z "$ids" ] || $cli volume rm -f $ids >/dev/null
			left=$($cli ps -aq --filter "$f" && $cli network ls -q --filter "$f" && $cli volume ls -q --filter "$f") || break
			[ -n "$left" ] || gone=1
			break
		done
		if [ -z "$gone" ]; then
			echo "skipped $id: $cli did not answer, or containers, networks or volumes of $project remain" >&2
			continue
		fi
	fi
	if [ -n "$ws" ]; then
		# Removed from inside its verified parent, so a symlink put in the
		# path after the check above cannot redirect rm -rf.
		(
			cd -- "${ws%/*}" 2>/dev/null || exit 0
			[ "$(pwd -P)" = "${ws%/*}" ] || exit 1
			rm -rf -- "./${ws##*/}"
		) || { echo "skipped $id: the parent of $ws is not what was recorded" >&2; continue; }
	fi
	# Its network subnets' reservation (composessh/networks.go), now free.
	rm -f -- "$root/.sandboxer/networks/$id.yml"
	# What interrupted writes of the record left beside it (records.go's
	# removeRecord does the same).
	rm -rf -- "$rec".tmp.*
	rm -f -- "$rec" # last: a reaper that dies midway retries next run
	echo "reaped $id ($why)"
done
