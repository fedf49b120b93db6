# A compose stack deployed on a Docker Swarm: the provider reaches the
# swarm's manager over SSH like any host, copies ./stack to an isolated
# workspace there and runs `docker stack deploy` under the sandbox's own
# stack name. Swarm spreads the tasks over the nodes; the sandbox is ready
# when every service has its replicas running, degraded on refresh when one
# falls below (a node lost), and destroy runs `docker stack rm` and waits
# until the services, networks and the manager's volumes are gone.
#
# Images must be on every node, or in a registry the nodes reach.
#
#   terraform apply -var manager=10.0.0.10 -var manager_node_id=$(ssh 10.0.0.10 docker info --format '{{.Swarm.NodeID}}')
terraform {
  required_providers {
    sandboxer = { source = "sand-boxer/sandboxer" }
  }
}

variable "manager" {
  description = "Address of a swarm manager node running sshd."
  type        = string
}

variable "manager_node_id" {
  description = "Swarm node id of the manager: the stack's database is pinned to it, so its volume stays there and is removed with the stack."
  type        = string
}

provider "sandboxer" {
  host {
    name             = "swarm"
    address          = var.manager
    user             = "ci"
    private_key_file = pathexpand("~/.ssh/id_ed25519")
    known_hosts_file = pathexpand("~/.ssh/known_hosts")
  }
}

resource "sandboxer_sandbox" "stack" {
  profile = "profile.swarm-e2e"
  host    = "swarm"
  inputs  = { repo = abspath("${path.module}/stack") }
  # The stack file reads MANAGER_NODE_ID: docker stack deploy interpolates
  # from the workspace .env the sandbox writes.
  env = { MANAGER_NODE_ID = var.manager_node_id }
}

# A checkpoint of this stack is refused at plan time: web may move between
# nodes. A stack whose services are all pinned (deploy.placement.constraints
# naming one node) can be checkpointed with quiesce = "stop" (swarm has no
# pause): its services are removed while the workspace is read and deployed
# again after.

data "sandboxer_host_inventory" "manager" {
  host = "swarm"
}

output "nodes" {
  description = "The swarm's nodes as the manager sees them."
  value       = data.sandboxer_host_inventory.manager.swarm_nodes
}
