# Every snapshot of one sandbox, oldest first, from every host the provider
# declares (each must be reachable). Set host to ask one host only.
data "sandboxer_snapshots" "e2e" {
  sandbox_id = sandboxer_sandbox.e2e.id
}

# Snapshots on build-2 whose name contains "known-good".
data "sandboxer_snapshots" "replicas" {
  host = "build-2"
  name = "known-good"
}

output "e2e_snapshot_ids" {
  value = [for s in data.sandboxer_snapshots.e2e.snapshots : s.id]
}

# The newest one, e.g. to restore it.
output "latest" {
  value = try(data.sandboxer_snapshots.e2e.snapshots[length(data.sandboxer_snapshots.e2e.snapshots) - 1], null)
}

output "replicas" {
  value = {
    for s in data.sandboxer_snapshots.replicas.snapshots :
    s.id => {
      host       = s.host
      created_at = s.created_at
      size_bytes = s.size_bytes
      digest     = s.digest
      ticket     = lookup(s.metadata, "ticket", "")
    }
  }
}
