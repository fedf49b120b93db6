# The checkpoint rows of scripts/bench-apply.sh: a workspace sandbox on one
# SSH host, the snapshots named in var.snapshots, and, when var.restore names
# one of them, a restore of it into a new sandbox.
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
variable "snapshots" {
  type    = list(string)
  default = []
}
variable "restore" {
  type    = string
  default = ""
}

provider "sandboxer" {
  default_host = "bench"
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
  profile = "profile.workspace"
}

resource "sandboxer_snapshot" "s" {
  for_each   = toset(var.snapshots)
  sandbox_id = sandboxer_sandbox.src.id
  name       = each.key
}

resource "sandboxer_restore" "new" {
  count       = var.restore == "" ? 0 : 1
  snapshot_id = sandboxer_snapshot.s[var.restore].id
}

output "workspace" {
  value = sandboxer_sandbox.src.workspace_dir
}

output "restored_workspace" {
  value = one(sandboxer_restore.new[*].workspace_dir)
}
