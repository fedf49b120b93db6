# Snapshots on build-1 whose name contains "release", oldest first,
# including those taken by the sandboxer_snapshot action or retained after
# their configuration was destroyed: adopt them with
#
#   terraform query -generate-config-out=snapshots.tf
list "sandboxer_snapshot" "releases" {
  provider         = sandboxer
  include_resource = true

  config {
    host = "build-1"
    name = "release"
  }
}

# Every snapshot of one sandbox, on whichever host holds it.
list "sandboxer_snapshot" "of_e2e" {
  provider = sandboxer

  config {
    sandbox_id = "3f9c2a7b1d0e"
  }
}
