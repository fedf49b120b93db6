# The last lines of the web and db services, when the tests failed:
#
#   terraform apply -invoke=action.sandboxer_logs.on_failure
action "sandboxer_logs" "on_failure" {
  config {
    sandbox_id = sandboxer_sandbox.e2e.id
    services   = ["web", "db"]
    tail       = 200
    since      = "30m"
  }
}
