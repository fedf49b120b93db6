# Whole-stack checkpoints: a compose stack with a database, its state in
# named volumes. Snapshot it, break the data, restore it in place, and get
# the exact state back; or restore it into a second sandbox.
#
# Needs a host with docker and compose (here over SSH; `host "local"` works
# on a machine that has them) and the images of stack/compose.yaml.
#
#   terraform apply -var ssh_host=build-1.example.com
#   # ... break things: psql, docker run -v <project>_db-data:/v ...
#   terraform apply -var ssh_host=build-1.example.com -var rollback=true

terraform {
  required_version = ">= 1.11"

  required_providers {
    sandboxer = {
      source = "sand-boxer/sandboxer"
    }
  }
}

variable "ssh_host" {
  type = string
}

variable "rollback" {
  type    = bool
  default = false
}

provider "sandboxer" {
  host {
    name    = "build-1"
    address = var.ssh_host
    user    = "ci" # a member of the docker group is enough: volume data is read in helper containers
  }
}

resource "sandboxer_sandbox" "db" {
  profile = "profile.compose-checkpoint"
  host    = "build-1"
  inputs  = { repo = abspath("${path.module}/stack") }
  env_wo  = { DB_PASSWORD = "example-only" }
}

# The workspace and both named volumes (db-data, uploads), captured while
# every service is paused: one consistent moment of the whole stack.
# profile.compose-checkpoint sets include_volumes and quiesce = "pause" by
# default; they are spelled out here.
resource "sandboxer_snapshot" "seeded" {
  sandbox_id      = sandboxer_sandbox.db.id
  name            = "seeded"
  include_volumes = true
  quiesce         = "pause"
}

# Back to the snapshot in place: services stopped, every object verified,
# the volumes rewritten (prune removes files written since), services
# started and waited ready.
resource "sandboxer_restore" "rollback" {
  count             = var.rollback ? 1 : 0
  snapshot_id       = sandboxer_snapshot.seeded.id
  target_sandbox_id = sandboxer_sandbox.db.id
  prune             = true
}

# A second sandbox from the same snapshot: its own volumes, created and
# filled before anything starts; the first sandbox is not touched.
resource "sandboxer_restore" "copy" {
  snapshot_id = sandboxer_snapshot.seeded.id
  profile     = "profile.compose-checkpoint"
  host        = "build-1"
}

output "snapshot" {
  value = {
    id           = sandboxer_snapshot.seeded.id
    volume_names = sandboxer_snapshot.seeded.volume_names
    file_count   = sandboxer_snapshot.seeded.file_count
    size_bytes   = sandboxer_snapshot.seeded.size_bytes
  }
}
