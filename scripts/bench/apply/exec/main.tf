# The day-two rows of scripts/bench-apply.sh (Terraform >= 1.14): a command
# in a sandbox's service through `terraform apply -invoke`, and an action
# that does next to nothing (one record read and write), whose invoke is
# Terraform's own start and the provider's.
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
variable "compose_command" { type = string }
variable "sandbox_id" { type = string }

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

action "sandboxer_exec" "true" {
  config {
    host       = "bench"
    sandbox_id = var.sandbox_id
    service    = "app"
    command    = ["true"]
  }
}

action "sandboxer_extend" "noop" {
  config {
    host       = "bench"
    sandbox_id = var.sandbox_id
    by         = "1s"
  }
}
