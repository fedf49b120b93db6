# What runs where on an SSH host: its facts, every sandbox recorded on it with
# its live status, and the stale ones (expired, or half-dead). Read at plan
# time; the host must answer, or the plan fails.
data "sandboxer_host_inventory" "build_1" {
  host = "build-1"
}

output "build_1" {
  value = {
    stale_sandbox_ids = data.sandboxer_host_inventory.build_1.stale_sandbox_ids # expired or half-dead sandboxes
    disk_free_bytes   = data.sandboxer_host_inventory.build_1.disk_free_bytes   # on the filesystem holding root_dir
    docker_version    = data.sandboxer_host_inventory.build_1.docker_version    # "" without docker
    reaper_scheduled  = data.sandboxer_host_inventory.build_1.reaper_scheduled  # cron runs the TTL reaper (reaper = true)
    sandboxes = {
      for s in data.sandboxer_host_inventory.build_1.sandboxes :
      s.id => "${s.profile}: ${s.status}, expires ${s.expires_at == "" ? "never" : s.expires_at}"
    }
  }
}

# Proves the host can run a compose stack: deploys profile.sandbox-canary,
# times create -> ready, and tears it down again. Nothing of it remains. A
# failed canary is a result, not an error; the postcondition makes it fail
# the plan.
data "sandboxer_host_inventory" "build_1_canary" {
  host       = "build-1"
  run_canary = true

  lifecycle {
    postcondition {
      condition     = self.canary_ok
      error_message = "build-1 cannot run a compose stack: ${self.canary_error}"
    }
  }
}

output "build_1_canary" {
  value = {
    ok       = data.sandboxer_host_inventory.build_1_canary.canary_ok       # true
    ready_ms = data.sandboxer_host_inventory.build_1_canary.canary_ready_ms # e.g. 2140
    error    = data.sandboxer_host_inventory.build_1_canary.canary_error    # "" when ok
  }
}

# A host that may be down: instead of failing the plan, the inventory says
# reachable = false and why; every fact is then empty or zero.
data "sandboxer_host_inventory" "build_2" {
  host              = "build-2"
  allow_unreachable = true
}

output "build_2" {
  value = {
    reachable          = data.sandboxer_host_inventory.build_2.reachable          # false when it did not answer
    unreachable_reason = data.sandboxer_host_inventory.build_2.unreachable_reason # e.g. "... unable to connect ..."
    load_1             = data.sandboxer_host_inventory.build_2.load_1
  }
}

# The machine running Terraform (the built-in host "local"): no SSH needed.
data "sandboxer_host_inventory" "local" {
  host = "local"
}

output "local" {
  value = {
    os                     = data.sandboxer_host_inventory.local.os     # "linux"
    arch                   = data.sandboxer_host_inventory.local.arch   # "x86_64"
    kernel                 = data.sandboxer_host_inventory.local.kernel # uname -r
    cpu_count              = data.sandboxer_host_inventory.local.cpu_count
    memory_available_bytes = data.sandboxer_host_inventory.local.memory_available_bytes
    disk_free_bytes        = data.sandboxer_host_inventory.local.disk_free_bytes
    store_bytes            = data.sandboxer_host_inventory.local.store_bytes # checkpoint store
    stale_sandbox_ids      = data.sandboxer_host_inventory.local.stale_sandbox_ids
  }
}
