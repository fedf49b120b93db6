# A compose file on a Kubernetes cluster, a namespace per sandbox: the
# provider converts ./app/compose.yaml on this machine (what a cluster
# cannot honour fails the plan, naming the key), creates the namespace's
# objects through the API server in depends_on order, uploads ./app's files
# into a volume of the sandbox, and is ready once every Deployment is
# available and the one-shot migration has completed. Destroy deletes the
# namespace and returns when it and its volumes are gone.
#
#   terraform apply -var kubeconfig=$HOME/.kube/config -var node_address=10.0.0.21
terraform {
  required_providers {
    sandboxer = { source = "sand-boxer/sandboxer" }
  }
}

variable "kubeconfig" {
  description = "Kubeconfig of the cluster (exec plugins work as with kubectl)."
  type        = string
}

variable "node_address" {
  description = "Address of a node this machine reaches: endpoints are <node_address>:<nodePort>."
  type        = string
}

variable "overnight" {
  description = "Scale every workload to 0, keeping the volumes."
  type        = bool
  default     = false
}

provider "sandboxer" {
  cluster {
    name            = "ci"
    kubeconfig_file = var.kubeconfig
    node_address    = var.node_address
    storage_class   = "standard"
    policy          = "baseline" # compose files from pull requests
  }
}

resource "sandboxer_sandbox" "app" {
  profile        = "profile.compose-k8s"
  host           = "ci"
  inputs         = { repo = abspath("${path.module}/app") }
  wait_for_ports = true
  desired_state  = var.overnight ? "stopped" : "running" # scales to 0 and back, in place
}

# A command in a service's pod, through the API's exec.
resource "sandboxer_command" "count" {
  host       = "ci"
  sandbox_id = sandboxer_sandbox.app.id
  service    = "db"
  command    = ["psql", "-U", "postgres", "-Atc", "SELECT count(*) FROM notes"]
}

output "web" {
  value = "http://${sandboxer_sandbox.app.endpoints["web:80"]}/"
}
