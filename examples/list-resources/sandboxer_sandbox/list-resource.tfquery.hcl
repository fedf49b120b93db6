# Sandboxes another pipeline left on build-1, with the state an import reads:
#
#   terraform query                                   # list them
#   terraform query -generate-config-out=adopted.tf   # import blocks + resources
#   terraform plan                                    # N to import, 0 to change
list "sandboxer_sandbox" "nightly" {
  provider         = sandboxer
  include_resource = true

  config {
    host    = "build-1"
    profile = "profile.compose-e2e"
    labels  = { pipeline = "nightly" }
  }
}

# Strays: sandboxes on any host whose expiry has passed, or that are no
# longer up (the reaper removes them; the sandboxer_reap action does now).
list "sandboxer_sandbox" "expired" {
  provider = sandboxer

  config {
    expired = true
  }
}

list "sandboxer_sandbox" "stopped" {
  provider = sandboxer
  limit    = 20

  config {
    status = "stopped"
  }
}
