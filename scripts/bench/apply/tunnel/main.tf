# The tunnel rows of scripts/bench-apply.sh: a compose sandbox of var.repo
# on one SSH host (its services publish nothing), and two sandboxer_tunnel
# to it, one to the service that sends a stream on each connection and one
# to the service that closes each connection at once. While the tunnels
# are open, var.measure_script times them and the `ssh -L` forwards of the
# same services (var.ssh_source, var.ssh_accept) in turns: only its own
# run is timed, not Terraform's. A new var.run runs it again; an empty
# var.measure_script runs nothing (the apply that makes the sandbox).
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
variable "measure_script" { type = string }
variable "ssh_source" { type = string }
variable "ssh_accept" { type = string }
variable "bytes" { type = number }
variable "conns" { type = number }
variable "out" { type = string }
variable "run" { type = string }

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

resource "sandboxer_sandbox" "s" {
  profile = "profile.compose-e2e"
  inputs  = { repo = var.repo }
}

ephemeral "sandboxer_tunnel" "source" {
  sandbox_id = sandboxer_sandbox.s.id
  service    = "source"
  port       = 9000
}

ephemeral "sandboxer_tunnel" "accept" {
  sandbox_id = sandboxer_sandbox.s.id
  service    = "accept"
  port       = 9001
}

output "compose_project" { value = sandboxer_sandbox.s.compose_project }

resource "terraform_data" "measure" {
  triggers_replace = [sandboxer_sandbox.s.id, var.run]

  provisioner "local-exec" {
    command = "[ -z \"$MEASURE\" ] || bash \"$MEASURE\""
    environment = {
      MEASURE    = var.measure_script
      TUN_SOURCE = ephemeral.sandboxer_tunnel.source.address
      TUN_ACCEPT = ephemeral.sandboxer_tunnel.accept.address
      SSH_SOURCE = var.ssh_source
      SSH_ACCEPT = var.ssh_accept
      BYTES      = var.bytes
      CONNS      = var.conns
      OUT        = var.out
    }
  }
}
