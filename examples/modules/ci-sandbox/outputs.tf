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

output "endpoints" {
  description = "Where the stack's published ports are reached: \"<service>:<target>\" (\"/udp\" appended for UDP) to \"<host>:<port>\", e.g. endpoints[\"web:80\"]. Each sandbox gets free host ports unless published_ports is \"as_written\"."
  value       = sandboxer_sandbox.this.endpoints
}

output "service_ports" {
  description = "Each service's published ports, by service name: { target, protocol, host_ip, published, address }."
  value       = { for s in sandboxer_sandbox.this.services : s.name => s.ports }
}

output "status" {
  description = "\"ready\", or \"stopped\" while desired_state is \"stopped\"."
  value       = sandboxer_sandbox.this.status
}

output "migrate_output" {
  description = "What the migrate command printed (standard output); null without one."
  value       = one(sandboxer_command.migrate[*].stdout)
  sensitive   = true
}
