output "id" {
  description = "Sandbox id, unique on its host."
  value       = sandboxer_sandbox.this.id
}

output "host" {
  description = "Host the sandbox runs on (the provider's name for it)."
  value       = sandboxer_sandbox.this.host
}

output "workspace_dir" {
  description = "Absolute path of the sandbox's workspace on its host: the copy of repo_path the stack runs from."
  value       = sandboxer_sandbox.this.workspace_dir
}

output "compose_project" {
  description = "Compose project name of the stack (sbx-<id>), e.g. for `docker compose -p <project> logs` on the host."
  value       = sandboxer_sandbox.this.compose_project
}

output "services" {
  description = "Names of the stack's compose services."
  value       = [for s in sandboxer_sandbox.this.services : s.name]
}

output "checkpoint_id" {
  description = "Id of the checkpoint snapshot; null when checkpoint is false."
  value       = one(sandboxer_snapshot.checkpoint[*].id)
}
