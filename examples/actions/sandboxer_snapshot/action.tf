# A checkpoint taken on demand, kept on the sandbox's host and listed by
# the sandboxer_snapshots data source, but not managed in state:
#
#   terraform apply -invoke=action.sandboxer_snapshot.before_migration
action "sandboxer_snapshot" "before_migration" {
  config {
    sandbox_id    = sandboxer_sandbox.e2e.id
    name          = "before-migration"
    exclude_paths = ["**/*.log"]
    quiesce       = "pause"
  }
}
