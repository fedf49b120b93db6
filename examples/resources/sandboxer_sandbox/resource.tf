# A docker-compose stack on an SSH host: the directory holding the compose
# file is copied into an isolated workspace and started under its own compose
# project. Apply returns once every service is running (and healthy, where it
# has a healthcheck). Editing a file in that directory plans a replacement.
resource "sandboxer_sandbox" "e2e" {
  profile = "profile.compose-e2e"
  host    = "build-1"

  inputs = {
    repo         = abspath("${path.module}/stack")
    compose_file = "compose.yaml"
  }

  # Written to the workspace as .env (mode 0600), never to the host record.
  env = {
    API_TOKEN = var.api_token
  }

  labels = {
    team = "payments"
    ci   = "nightly"
  }

  timeouts {
    create = "20m" # first start may build images
    delete = "10m"
  }
}

# A plain workspace directory on the built-in host "local": needs no SSH and
# no docker.
resource "sandboxer_sandbox" "scratch" {
  profile = "profile.workspace"
  host    = "local"

  inputs = {
    repo = abspath("${path.module}/app")
  }

  labels = {
    purpose = "scratch"
  }

  timeouts {
    create = "2m"
  }
}

variable "api_token" {
  type      = string
  sensitive = true
}
