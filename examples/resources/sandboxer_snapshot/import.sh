# HOST/SNAPSHOT_ID: the host's name in the provider block, then the snapshot id.
terraform import sandboxer_snapshot.example build-1/snap-3f9c2a7b1d0e
