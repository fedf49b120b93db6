# Profiles and metering: user profile files, the profile data source, and a
# metered sandbox with a lifetime, quoted at plan time and charged on destroy.
#
# Everything runs on the built-in host "local": no SSH, no docker, nothing to
# install. profile.saas-stub is the metered stand-in for a SaaS sandbox
# service (no external API): its sandboxes are workspaces on this machine,
# paid for from a credits ledger, a JSON file you create first:
#
#   echo '{"balance_usd": 5}' > credits.json
#   terraform apply     # quotes 0.50 USD/h x 3h = 1.50 USD, holds it, creates the sandbox
#   cat credits.json    # balance 5, a hold of 1.5 for the sandbox
#   terraform destroy   # releases the hold, debits the measured lifetime
#   cat credits.json    # no hold; balance 5 less 0.50 USD/h for the time it lived
#
# The provider reads profiles from ../profiles_dir as well as its built-ins:
# profile.vm-haskell-build.yaml overrides a built-in, profile.team-e2e.yaml
# adds a profile. Their data sources below show where each came from.

terraform {
  required_version = ">= 1.11"

  required_providers {
    sandboxer = {
      source = "sand-boxer/sandboxer"
    }
  }
}

variable "credits_file" {
  description = "The credits ledger: a JSON file such as {\"balance_usd\": 5}, created before the first plan. Relative paths are relative to the working directory."
  type        = string
  default     = "credits.json"
}

variable "ttl" {
  description = "Lifetime of the metered sandbox; the quote is 0.50 USD per hour of it."
  type        = string
  default     = "3h"
}

provider "sandboxer" {
  # profile.<name>.yaml and ext.<name>.yaml files, in the built-ins' format.
  # A broken file fails the plan, naming the file and the field.
  profiles_dir = abspath("${path.module}/../profiles_dir")

  # Metered profiles are quoted against this ledger at plan time and refused
  # there when it is short.
  credits_file = abspath(var.credits_file)
}

# 1. The profiles: a built-in, the override and the new one from profiles_dir.
data "sandboxer_profile" "saas" {
  name = "profile.saas-stub"
}

data "sandboxer_profile" "haskell" {
  name = "profile.vm-haskell-build"
}

data "sandboxer_profile" "team_e2e" {
  name = "profile.team-e2e"
}

# 2. A metered sandbox. The plan shows estimated_cost_usd (hourly price x ttl)
#    and routes it to ext.saas-stub on host "local". With credits short of
#    the quote the plan fails before anything is created (try ttl = "20h").
#    Changing ttl later moves expires_at in place; the quote stays the one
#    held at create.
resource "sandboxer_sandbox" "metered" {
  profile = "profile.saas-stub"
  ttl     = var.ttl

  labels = {
    example = "profiles"
  }
}

output "metered" {
  description = "The metered sandbox: where routing put it, its lifetime and its quote."
  value = {
    id                 = sandboxer_sandbox.metered.id
    extension          = sandboxer_sandbox.metered.extension
    host               = sandboxer_sandbox.metered.host
    workspace_dir      = sandboxer_sandbox.metered.workspace_dir
    ttl                = sandboxer_sandbox.metered.ttl
    created_at         = sandboxer_sandbox.metered.created_at
    expires_at         = sandboxer_sandbox.metered.expires_at
    estimated_cost_usd = sandboxer_sandbox.metered.estimated_cost_usd
  }
}

output "saas_profile" {
  description = "The built-in metered profile."
  value = {
    extension          = data.sandboxer_profile.saas.extension
    extension_kind     = data.sandboxer_profile.saas.extension_kind
    hourly_price_usd   = data.sandboxer_profile.saas.hourly_price_usd
    ttl                = data.sandboxer_profile.saas.ttl
    supports_snapshots = data.sandboxer_profile.saas.supports_snapshots
    source             = data.sandboxer_profile.saas.source
  }
}

output "haskell_override" {
  description = "profile.vm-haskell-build as overridden by ../profiles_dir: source is the file, workspace_base the new one."
  value = {
    version        = data.sandboxer_profile.haskell.version
    workspace_base = data.sandboxer_profile.haskell.settings["workspace_base"]
    source         = data.sandboxer_profile.haskell.source
  }
}

output "team_e2e_profile" {
  description = "The profile added by ../profiles_dir/profile.team-e2e.yaml."
  value = {
    extension          = data.sandboxer_profile.team_e2e.extension
    placement          = data.sandboxer_profile.team_e2e.placement
    ttl                = data.sandboxer_profile.team_e2e.ttl
    required_inputs    = data.sandboxer_profile.team_e2e.required_inputs
    supports_snapshots = data.sandboxer_profile.team_e2e.supports_snapshots
    source             = data.sandboxer_profile.team_e2e.source
  }
}
