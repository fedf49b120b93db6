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
  # env is kept in Terraform state (sensitive only hides it from the UI):
  # use it for settings, and env_wo for secrets.
  env = {
    LOG_LEVEL = "debug"
  }

  # Write-only (Terraform >= 1.11, OpenTofu >= 1.11): merged into the same
  # .env, never stored in state, plan, the host record or logs. Bump
  # env_wo_version to roll out a new token (the sandbox is replaced).
  env_wo = {
    API_TOKEN = var.api_token
  }
  env_wo_version = 1

  labels = {
    team = "payments"
    ci   = "nightly"
  }

  # Lifetime: gives expires_at (created_at + ttl). The profile's default is
  # 2h; changing ttl later moves expires_at in place. At expiry the host's
  # reaper stops the stack (on_expiry = "stop") rather than destroying it.
  ttl       = "4h"
  on_expiry = "stop"

  # "stopped" stops every container in place overnight (workspace, volumes
  # and networks kept); "running" starts them again and waits until ready.
  desired_state = var.overnight ? "stopped" : "running"

  timeouts {
    create = "20m" # first start may build images
    update = "20m" # a start waits for readiness
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

# A metered sandbox (needs credits_file in the provider block). The plan
# shows estimated_cost_usd = 0.50 USD/h x 90m = 0.75 USD and fails if the
# credits ledger cannot cover it; the quote is held while the sandbox lives
# and the measured lifetime is debited on destroy. It always runs on "local".
resource "sandboxer_sandbox" "metered" {
  profile = "profile.saas-stub"
  ttl     = "90m"
}

variable "api_token" {
  type      = string
  sensitive = true
}
