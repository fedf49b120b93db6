# A migration before the tests, run once in the sandbox's db service; a
# new migrations directory runs it again.
resource "sandboxer_command" "migrate" {
  sandbox_id = sandboxer_sandbox.e2e.id
  service    = "db"
  command    = ["sh", "-c", "psql -v ON_ERROR_STOP=1 -U postgres -f /migrations/all.sql"]
  timeout    = "5m"
  triggers   = { migrations = sandboxer_sandbox.e2e.source_hash }

  # Before the sandbox goes, keep a dump of its database.
  destroy_command = ["sh", "-c", "pg_dump -U postgres > /backups/last.sql"]
}

# A value another resource needs: the admin token the app generated.
resource "sandboxer_command" "admin_token" {
  sandbox_id       = sandboxer_sandbox.e2e.id
  service          = "web"
  command          = ["cat", "/run/app/admin-token"]
  sensitive_output = true
  depends_on       = [sandboxer_command.migrate]
}

output "admin_token" {
  value     = trimspace(sandboxer_command.admin_token.stdout)
  sensitive = true
}
