# A checkpoint of the compose sandbox from the sandboxer_sandbox example. The
# files are read on the sandbox's host and kept in that host's store; the
# sandbox keeps running.
resource "sandboxer_snapshot" "known_good" {
  sandbox_id  = sandboxer_sandbox.e2e.id
  name        = "known-good"
  description = "state after the nightly seed"

  # Workspace-relative patterns: `*` stays within one path element, `**`
  # spans elements, a pattern without "/" matches at any depth, and a
  # matching directory takes its whole subtree.
  include_paths = ["app", "db/seed/**", "compose.yaml"]
  exclude_paths = ["**/*.log", "node_modules", "app/tmp"]

  # Also capture the workspace .env. The values stay on the host (mode 0600);
  # Terraform state only gets their names, in env_names.
  include_env = true

  # Pause the compose services while the files are read, so a database does
  # not write half a page into the snapshot. They are unpaused afterwards,
  # also when the capture fails.
  quiesce = "pause"

  metadata = {
    ticket = "OPS-1432"
    commit = "9b1d4e0"
  }

  timeouts {
    create = "30m" # large workspaces take a while the first time
  }
}

# A whole-stack checkpoint of a stateful compose sandbox (a database in a
# named volume): the workspace and the stack's named volumes, captured while
# every service is paused, so the database files and the workspace are from
# one moment. profile.compose-checkpoint takes volumes by default; any
# compose profile can with include_volumes = true.
resource "sandboxer_snapshot" "whole_stack" {
  sandbox_id = sandboxer_sandbox.e2e.id
  name       = "seeded-db"

  include_volumes = true
  volumes         = ["db-data"] # only this compose volume; default: all of them
  quiesce         = "pause"     # or "stop" for a clean shutdown and restart
}

# A copy of that snapshot on another host, e.g. to restore it there. Only
# the objects build-2 does not already hold are transferred. The copy keeps
# the original's content, env and digest.
resource "sandboxer_snapshot" "known_good_on_build_2" {
  source_snapshot_id = sandboxer_snapshot.known_good.id
  host               = "build-2"
  name               = "known-good-replica"

  # Keep the copy on build-2 when this resource is destroyed.
  retain_on_destroy = true
}

output "known_good" {
  value = {
    id           = sandboxer_snapshot.known_good.id
    digest       = sandboxer_snapshot.known_good.digest
    file_count   = sandboxer_snapshot.known_good.file_count
    size_bytes   = sandboxer_snapshot.known_good.size_bytes
    stored_bytes = sandboxer_snapshot.known_good.stored_bytes # new in the host's store
    env_names    = sandboxer_snapshot.known_good.env_names
  }
}
