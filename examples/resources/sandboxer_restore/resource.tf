# New sandbox: a fresh sandbox on build-2 whose workspace is populated from
# the snapshot before it starts. The snapshot lives on build-1; the objects
# build-2 lacks are transferred first. The source sandbox is not touched.
# Destroying this resource tears the new sandbox down.
resource "sandboxer_restore" "repro" {
  snapshot_id = sandboxer_snapshot.known_good.id
  host        = "build-2"

  # Default: the profile of the sandbox the snapshot was taken from.
  profile = "profile.compose-e2e"

  # Profile inputs of the new sandbox. The repo is copied first, then the
  # snapshot is written over it.
  inputs = {
    repo = abspath("${path.module}/stack")
  }

  timeouts {
    create = "20m"
  }
}

# In place: roll an existing sandbox back to the snapshot. Its compose
# services are stopped, every object is verified against its digest, the
# files and the captured .env are written, and the services are started and
# waited ready again. Destroying this resource leaves the sandbox alone.
resource "sandboxer_restore" "rollback" {
  snapshot_id       = sandboxer_snapshot.known_good.id
  target_sandbox_id = sandboxer_sandbox.e2e.id

  restore_files = true
  restore_env   = true
  overwrite     = true

  # Also delete files inside the snapshot's include/exclude scope that the
  # snapshot does not have, so that scope matches the snapshot exactly.
  # Files outside the scope (e.g. excluded logs) are never touched.
  prune = true

  # The restore runs on create and again whenever a trigger changes: bump
  # the value to roll back once more.
  triggers = {
    rollback = "2"
  }
}

output "repro" {
  value = {
    sandbox_id     = sandboxer_restore.repro.sandbox_id
    workspace_dir  = sandboxer_restore.repro.workspace_dir
    files_restored = sandboxer_restore.repro.files_restored
  }
}
