# What changed in a sandbox's workspace between two of its snapshots:
# known_good and after_tests, both of sandboxer_sandbox.e2e, taken with the
# same include/exclude paths (a file outside one snapshot's scope shows as
# added or removed). Both must be on the same host; to compare snapshots of
# different hosts, copy one over first (source_snapshot_id + host).
data "sandboxer_snapshot_diff" "since_known_good" {
  from = sandboxer_snapshot.known_good.id
  to   = sandboxer_snapshot.after_tests.id
}

output "files_added" {
  value = data.sandboxer_snapshot_diff.since_known_good.files_added
}

output "files_removed" {
  value = data.sandboxer_snapshot_diff.since_known_good.files_removed
}

# Content, mode, type or link target changed.
output "files_modified" {
  value = data.sandboxer_snapshot_diff.since_known_good.files_modified
}

# Env changes are reported by name only: values never reach Terraform.
output "env_changes" {
  value = {
    added    = data.sandboxer_snapshot_diff.since_known_good.env_added
    removed  = data.sandboxer_snapshot_diff.since_known_good.env_removed
    modified = data.sandboxer_snapshot_diff.since_known_good.env_modified
  }
}

output "size_change_bytes" {
  value = data.sandboxer_snapshot_diff.since_known_good.size_change_bytes
}
