# A host pool on this machine: three "hosts" that are root directories of
# the local host, of different sizes. Six workspace sandboxes of one apply
# spread over them, each host filled to its max_sandboxes; a seventh would
# be refused at plan time ("pool "demo" has no host that can take another
# sandbox", with each host's count). Needs no SSH and no docker:
#
#   terraform apply && terraform output hosts && terraform destroy
#
# On a fleet, the host blocks are SSH hosts (address, user, keys) and the
# sandboxes compose stacks; nothing else changes.
terraform {
  required_providers {
    sandboxer = { source = "sand-boxer/sandboxer" }
  }
}

variable "root" {
  description = "Directory the three hosts' root directories are made in."
  type        = string
  default     = "/tmp/sandboxer-pool-example"
}

provider "sandboxer" {
  host {
    name          = "small"
    local         = true
    root_dir      = "${var.root}/small"
    pool          = "demo"
    max_sandboxes = 1
  }
  host {
    name          = "medium"
    local         = true
    root_dir      = "${var.root}/medium"
    pool          = "demo"
    max_sandboxes = 2
  }
  host {
    name          = "large"
    local         = true
    root_dir      = "${var.root}/large"
    pool          = "demo"
    max_sandboxes = 3
  }
}

resource "sandboxer_sandbox" "job" {
  count     = 6
  profile   = "profile.workspace"
  host_pool = "demo"
}

output "hosts" {
  description = "Where each sandbox was placed (known after apply)."
  value       = sandboxer_sandbox.job[*].host
}
