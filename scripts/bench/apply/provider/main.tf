# The provider's side of scripts/bench-apply.sh: N compose sandboxes on one
# SSH host, each a copy of var.repo brought up with compose and waited ready.
terraform {
  required_providers {
    sandboxer = { source = "sand-boxer/sandboxer" }
  }
}

variable "n" { type = number }
variable "address" { type = string }
variable "user" { type = string }
variable "private_key_file" { type = string }
variable "known_hosts_file" { type = string }
variable "root_dir" { type = string }
variable "repo" { type = string }
variable "compose_command" { type = string }
variable "snapshots" {
  type    = bool
  default = false
}
variable "max_network_operations" {
  type    = number
  default = null
}
variable "desired_state" {
  type    = string
  default = "running"
}
variable "ttl" {
  type    = string
  default = null
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

    max_network_operations = var.max_network_operations
  }
}

resource "sandboxer_sandbox" "s" {
  count         = var.n
  profile       = "profile.compose-e2e"
  inputs        = { repo = var.repo }
  desired_state = var.desired_state
  ttl           = var.ttl
}

output "first" {
  value = length(sandboxer_sandbox.s) > 0 ? { id = sandboxer_sandbox.s[0].id, project = sandboxer_sandbox.s[0].compose_project } : null
}

resource "sandboxer_snapshot" "s" {
  count      = var.snapshots ? var.n : 0
  sandbox_id = sandboxer_sandbox.s[count.index].id
  name       = "bench-${count.index}"
}
