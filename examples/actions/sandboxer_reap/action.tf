# Remove what has expired on build-1 now, instead of waiting for the
# reaper's next minute (or where no reaper is installed):
#
#   terraform apply -invoke=action.sandboxer_reap.build1
#
# Each removed sandbox is reported as the action runs.
action "sandboxer_reap" "build1" {
  config {
    host = "build-1"
  }
}

# Or after every apply that changes the pipeline's sandboxes.
resource "terraform_data" "pipeline" {
  input = sandboxer_sandbox.e2e.id

  lifecycle {
    action_trigger {
      events  = [after_create, after_update]
      actions = [action.sandboxer_reap.build1]
    }
  }
}
