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
