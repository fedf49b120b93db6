# The compose sandbox from the sandboxer_sandbox example; its compose file
# has a PostgreSQL service "db" that publishes no port.
resource "sandboxer_sandbox" "e2e" {
  profile = "profile.compose-e2e"
  host    = "build-1"
  inputs  = { repo = abspath("${path.module}/app") }
}

# 127.0.0.1:<local_port> on the machine running Terraform, relayed over
# build-1's SSH connection to port 5432 of the db container, for this run.
ephemeral "sandboxer_tunnel" "db" {
  sandbox_id = sandboxer_sandbox.e2e.id
  service    = "db"
  port       = 5432
}

# Load the schema from this machine in the run that creates the sandbox.
resource "terraform_data" "schema" {
  input = sandboxer_sandbox.e2e.id # again for a new sandbox

  provisioner "local-exec" {
    command = "psql -v ON_ERROR_STOP=1 -U postgres -f schema.sql"
    environment = {
      PGHOST = ephemeral.sandboxer_tunnel.db.local_host
      PGPORT = ephemeral.sandboxer_tunnel.db.local_port
    }
  }
}
