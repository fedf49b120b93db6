# Quickstart: one sandbox on this machine.
#
# The built-in host "local" runs sandboxes on the machine running Terraform:
# no SSH, no docker, nothing to install. "profile.workspace" is a plain,
# isolated directory; the `repo` input is copied into it.
#
#   terraform apply       # creates the sandbox, prints its outputs
#   terraform destroy     # removes the workspace directory again

terraform {
  required_version = ">= 1.11"

  required_providers {
    sandboxer = {
      source = "sand-boxer/sandboxer"
    }
  }
}

# No hosts to declare: "local" always exists.
provider "sandboxer" {}

resource "sandboxer_sandbox" "quickstart" {
  profile = "profile.workspace"
  host    = "local"

  inputs = {
    # Paths containing ".." are rejected; abspath() resolves them.
    repo = abspath("${path.module}/app")
  }

  labels = {
    example = "quickstart"
    owner   = "you"
  }
}

output "id" {
  description = "Sandbox id, unique on its host. Import with: terraform import sandboxer_sandbox.quickstart local/<id>"
  value       = sandboxer_sandbox.quickstart.id
}

output "workspace_dir" {
  description = "Where the sandbox lives on this machine."
  value       = sandboxer_sandbox.quickstart.workspace_dir
}

output "status" {
  description = "ready, or what the last refresh found (stopped, degraded, missing)."
  value       = sandboxer_sandbox.quickstart.status
}

output "ready_at" {
  description = "When the sandbox became ready (RFC 3339)."
  value       = sandboxer_sandbox.quickstart.ready_at
}
