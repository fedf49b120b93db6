# The peer's side of the network rows of scripts/bench-apply.sh: N copies
# of the same compose stack through the docker provider's docker_compose
# (v4.5.0, built from its source), over SSH as its users configure it.
terraform {
  required_providers {
    docker = { source = "kreuzwerker/docker" }
  }
}

variable "n" { type = number }
variable "host" { type = string }
variable "ssh_opts" { type = list(string) }
variable "compose_file" { type = string }

provider "docker" {
  host     = var.host
  ssh_opts = var.ssh_opts
}

resource "docker_compose" "s" {
  count        = var.n
  project_name = "bench-peer-${count.index}"
  config_paths = [var.compose_file]
  wait         = true
  wait_timeout = "120s"
}
