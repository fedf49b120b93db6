# A docker-compose stack for a CI job: repo_path is copied into an isolated
# workspace on the host, started under its own compose project and waited
# ready (every service running, and healthy where it has a healthcheck).
# Destroying it removes the compose project, its volumes and the workspace.
#
# The module declares no provider block: configure the sandboxer provider
# (its hosts) in the calling configuration.

locals {
  # compose_file is passed to the profile only when set; otherwise the
  # profile looks for compose.yaml, compose.yml, docker-compose.yml and
  # docker-compose.yaml in that order.
  inputs = merge(
    { repo = abspath(var.repo_path) },
    var.compose_file == null ? {} : { compose_file = var.compose_file },
  )
}

resource "sandboxer_sandbox" "this" {
  profile = "profile.compose-e2e"
  host    = var.host
  inputs  = local.inputs
  env     = var.env
  labels  = var.labels
  ttl     = var.ttl

  published_ports = var.published_ports
  wait_for_ports  = var.wait_for_ports
  desired_state   = var.desired_state
}

# The optional migration, run once when the sandbox is created.
resource "sandboxer_command" "migrate" {
  count = var.migrate == null ? 0 : 1

  sandbox_id = sandboxer_sandbox.this.id
  host       = sandboxer_sandbox.this.host
  service    = var.migrate.service
  command    = var.migrate.command
}

# An optional checkpoint of the sandbox's workspace, kept in the host's
# snapshot store. Destroying it frees what no other snapshot on the host
# references; it is destroyed before the sandbox.
resource "sandboxer_snapshot" "checkpoint" {
  count = var.checkpoint ? 1 : 0

  sandbox_id  = sandboxer_sandbox.this.id
  host        = sandboxer_sandbox.this.host
  name        = var.checkpoint_name
  description = "Checkpoint of sandbox ${sandboxer_sandbox.this.id} (${sandboxer_sandbox.this.compose_project})"
}
