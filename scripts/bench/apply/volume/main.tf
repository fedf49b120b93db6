# The volume rows of scripts/bench-apply.sh: a compose sandbox whose one
# service keeps its data in the named volume "data", snapshots of it
# (workspace and volume) named in var.snapshots, and, when var.restore names
# one of them, a restore of it into a new sandbox (new volume filled before
# the stack starts).
terraform {
  required_providers {
    sandboxer = { source = "sand-boxer/sandboxer" }
  }
}

variable "address" { type = string }
variable "user" { type = string }
variable "private_key_file" { type = string }
variable "known_hosts_file" { type = string }
variable "root_dir" { type = string }
variable "repo" { type = string }
variable "compose_command" { type = string }
variable "snapshots" {
  type    = list(string)
  default = []
}
variable "restore" {
  type    = string
  default = ""
}

provider "sandboxer" {
  compose_command = var.compose_command
  default_host    = "bench"
  host {
    name             = "bench"
    address          = var.address
    user             = var.user
    private_key_file = var.private_key_file
    known_hosts_file = var.known_hosts_file
    root_dir         = var.root_dir
  }
}

resource "sandboxer_sandbox" "src" {
  profile = "profile.compose-checkpoint"
  inputs  = { repo = var.repo }
}

# quiesce none: the recipe it is compared with does not pause either.
resource "sandboxer_snapshot" "s" {
  for_each        = toset(var.snapshots)
  sandbox_id      = sandboxer_sandbox.src.id
  name            = each.key
  include_volumes = true
  quiesce         = "none"
}

resource "sandboxer_restore" "new" {
  count       = var.restore == "" ? 0 : 1
  snapshot_id = sandboxer_snapshot.s[var.restore].id
  profile     = "profile.compose-checkpoint"
}

output "project" {
  value = sandboxer_sandbox.src.compose_project
}

output "restored_sandbox" {
  value = one(sandboxer_restore.new[*].sandbox_id)
}
