# Roll the e2e sandbox back to the known-good checkpoint, on demand:
#
#   terraform apply -invoke=action.sandboxer_restore.rollback
#
# Its compose services are stopped, every object is verified, the files and
# the captured .env are written, and the services are started and waited
# ready again.
action "sandboxer_restore" "rollback" {
  config {
    snapshot_id       = sandboxer_snapshot.known_good.id
    target_sandbox_id = sandboxer_sandbox.e2e.id
    prune             = true
  }
}
