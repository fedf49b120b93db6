# Two more hours before the reaper acts, without a plan:
#
#   terraform apply -invoke=action.sandboxer_extend.two_hours
action "sandboxer_extend" "two_hours" {
  config {
    sandbox_id = sandboxer_sandbox.e2e.id
    by         = "2h"
  }
}
