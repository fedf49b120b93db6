terraform {
  required_providers {
    sandboxer = {
      source = "sand-boxer/sandboxer"
    }
  }
}

# A host named "local" (local = true) is always there: sandboxes on it run on
# the machine running Terraform, with no SSH and nothing else to configure.
# Declare SSH hosts for everything else.
provider "sandboxer" {
  # Used by sandboxes that set no `host` (env SANDBOXER_HOST).
  default_host = "build-1"

  # More profiles (profile.<name>.yaml) and extension declarations
  # (ext.<name>.yaml); a file named like a built-in replaces it. A broken
  # file fails the plan, naming the file and the field.
  profiles_dir = abspath("${path.module}/profiles")

  # The credits ledger of metered profiles (profile.saas-stub,
  # profile.burst-sandbox), created once with
  #   echo '{"balance_usd": 25}' > credits.json
  # Metered sandboxes are quoted against it at plan time, hold their quote
  # while they live and are debited for their measured lifetime on destroy.
  credits_file = abspath("${path.module}/credits.json")

  # Lifecycle events (sandbox.created, sandbox.ready, sandbox.destroyed,
  # snapshot.created, snapshot.deleted, restore.completed), each POSTed as
  # JSON to this URL and signed with an X-Sandboxer-Signature header
  # (sha256=<hex HMAC-SHA256 of the body, keyed with events_secret>). An
  # event that cannot be delivered within 5 seconds is a warning only.
  events_url    = "https://hooks.example.internal/sandboxer"
  events_secret = var.events_secret
  # Stamped on every event: "adm" (an administrator), "agt" (an agent) or
  # "atm" (automation, the default).
  actor = "atm"

  host {
    name    = "build-1"
    address = "build-1.example.internal:22"
    user    = "sandboxer"

    # The host key is always verified. Record it once, checking the
    # fingerprint out of band:
    #   ssh-keyscan -p 22 build-1.example.internal >> ~/.ssh/known_hosts
    # (or pin it here with host_key = "ssh-ed25519 AAAA...").
    known_hosts_file = pathexpand("~/.ssh/known_hosts")
    private_key_file = pathexpand("~/.ssh/id_ed25519")

    # Where sandboxes live, relative to the SSH user's home.
    root_dir = "sandboxer"

    # Tear down expired sandboxes (past their expires_at) on the host itself,
    # with nobody running Terraform: installs a POSIX sh reaper under
    # root_dir/.sandboxer/bin/reaper.sh, run every minute from cron where
    # the host has cron, when a sandbox is first created here.
    reaper = true
  }

  # A host only reachable through a jump host. Both connections verify
  # their host keys; both keys must be in the known_hosts file.
  host {
    name             = "build-2"
    address          = "10.0.12.7:22"
    user             = "sandboxer"
    use_agent        = true
    known_hosts_file = pathexpand("~/.ssh/known_hosts")

    bastion {
      address          = "bastion.example.com:22"
      user             = "jump"
      use_agent        = true
      known_hosts_file = pathexpand("~/.ssh/known_hosts")
    }
  }
}

variable "events_secret" {
  description = "Key of the HMAC-SHA256 signature on lifecycle events."
  type        = string
  sensitive   = true
}
