# Checkpoints: snapshot a sandbox, change it, see what changed, restore.
#
# Everything runs on the built-in host "local" with profile.workspace (a
# plain directory): no SSH, no docker, nothing to install. One step, the
# stand-in for "work happening in the sandbox", runs a POSIX shell.
#
#   terraform apply     # sandbox -> baseline snapshot -> work -> second
#                       # snapshot -> diff -> copy and rollback from baseline
#   terraform output    # what the snapshots hold and what changed
#   terraform destroy   # removes both sandboxes and both snapshots
#
# Snapshots of the local host are kept in its store, under
# $XDG_DATA_HOME/sandboxer/.sandboxer/store (or
# ~/.local/share/sandboxer/.sandboxer/store).

terraform {
  required_version = ">= 1.11"

  required_providers {
    sandboxer = {
      source = "sand-boxer/sandboxer"
    }
  }
}

provider "sandboxer" {}

# 1. A sandbox: a copy of app/ plus a .env written from `env`.
resource "sandboxer_sandbox" "app" {
  profile = "profile.workspace"
  host    = "local"

  inputs = {
    repo = abspath("${path.module}/app")
  }

  env = {
    GREETING = "hello"
    MODE     = "tutorial"
  }
}

# 2. A baseline snapshot of its workspace. Logs and the tmp directory are
#    left out; the .env is captured as env (values stay on the host, only
#    their names reach Terraform state).
resource "sandboxer_snapshot" "baseline" {
  sandbox_id    = sandboxer_sandbox.app.id
  name          = "baseline"
  description   = "app/ as copied, before any work"
  exclude_paths = ["*.log", "tmp"]
  include_env   = true

  metadata = {
    step = "2"
  }
}

# 3. Work happens in the sandbox. Here a shell command stands in for a
#    build, a test run or an agent: it edits a file, adds one, deletes one,
#    writes a log and a cache (both excluded from snapshots) and changes an
#    env value.
resource "terraform_data" "work" {
  input      = sandboxer_sandbox.app.workspace_dir
  depends_on = [sandboxer_snapshot.baseline]

  provisioner "local-exec" {
    working_dir = self.output
    command     = <<-EOT
      set -e
      printf 'workers = 4\n' >> config/app.ini
      printf '#!/bin/sh\necho "the new feature"\n' > src/feature.sh
      rm src/legacy.sh
      printf 'built at %s\n' "$(date)" > build.log
      mkdir -p tmp && printf 'cache\n' > tmp/cache.bin
      printf 'GREETING=bonjour\nMODE=tutorial\n' > .env
    EOT
  }
}

# 4. A second snapshot, same scope. Only content the store does not have
#    yet is stored again: see stored_bytes.
resource "sandboxer_snapshot" "after_work" {
  sandbox_id    = sandboxer_sandbox.app.id
  name          = "after-work"
  exclude_paths = ["*.log", "tmp"]
  include_env   = true

  metadata = {
    step = "4"
  }

  depends_on = [terraform_data.work]
}

# 5. What changed between the two. Env changes are reported by name only.
data "sandboxer_snapshot_diff" "what_changed" {
  from = sandboxer_snapshot.baseline.id
  to   = sandboxer_snapshot.after_work.id
}

# 6a. Restore the baseline into a new sandbox, next to the changed one.
#     The profile defaults to the snapshot's (profile.workspace). Destroying
#     this resource removes the new sandbox.
resource "sandboxer_restore" "baseline_copy" {
  snapshot_id = sandboxer_snapshot.baseline.id
  host        = "local"
}

# 6b. Roll the original sandbox back to the baseline in place, after the
#     second snapshot has been taken. prune removes files the baseline does
#     not have (src/feature.sh); excluded paths (build.log, tmp/) are left
#     alone. Destroying this resource leaves the sandbox as it is.
resource "sandboxer_restore" "rollback" {
  snapshot_id       = sandboxer_snapshot.baseline.id
  target_sandbox_id = sandboxer_sandbox.app.id
  prune             = true

  depends_on = [sandboxer_snapshot.after_work]
}

output "baseline" {
  description = "The baseline snapshot. Import it with: terraform import sandboxer_snapshot.baseline local/<id>"
  value = {
    id         = sandboxer_snapshot.baseline.id
    digest     = sandboxer_snapshot.baseline.digest
    file_count = sandboxer_snapshot.baseline.file_count
    size_bytes = sandboxer_snapshot.baseline.size_bytes
    env_names  = sandboxer_snapshot.baseline.env_names
  }
}

output "after_work" {
  description = "The second snapshot: stored_bytes counts only the content that was new to the store."
  value = {
    id           = sandboxer_snapshot.after_work.id
    file_count   = sandboxer_snapshot.after_work.file_count
    size_bytes   = sandboxer_snapshot.after_work.size_bytes
    stored_bytes = sandboxer_snapshot.after_work.stored_bytes
  }
}

output "what_changed" {
  description = "Files and env names that differ between the baseline and after_work."
  value = {
    files_added       = data.sandboxer_snapshot_diff.what_changed.files_added
    files_removed     = data.sandboxer_snapshot_diff.what_changed.files_removed
    files_modified    = data.sandboxer_snapshot_diff.what_changed.files_modified
    env_modified      = data.sandboxer_snapshot_diff.what_changed.env_modified
    size_change_bytes = data.sandboxer_snapshot_diff.what_changed.size_change_bytes
  }
}

output "baseline_copy" {
  description = "The new sandbox restored from the baseline."
  value = {
    sandbox_id     = sandboxer_restore.baseline_copy.sandbox_id
    workspace_dir  = sandboxer_restore.baseline_copy.workspace_dir
    files_restored = sandboxer_restore.baseline_copy.files_restored
  }
}

output "app_workspace_dir" {
  description = "The original sandbox, rolled back to the baseline (build.log and tmp/ are still there: they were never in scope)."
  value       = sandboxer_sandbox.app.workspace_dir
}
