variable "repo_path" {
  description = "Directory on the machine running Terraform that holds the compose file (and whatever it builds or mounts). Relative paths are resolved against the working directory, so pass \"$${path.root}/...\" or \"$${path.module}/...\" from a calling configuration."
  type        = string
  nullable    = false

  validation {
    condition     = length(trimspace(var.repo_path)) > 0
    error_message = "repo_path must name the directory holding the compose stack; it is empty."
  }
}

variable "host" {
  description = "Host (a host block of the provider, or \"local\") to place the sandbox on. null: the provider's default placement (default_host or SANDBOXER_HOST, else the profile's placement, else \"local\")."
  type        = string
  default     = null
}

variable "compose_file" {
  description = "Compose file inside repo_path. null: the profile's lookup (compose.yaml, compose.yml, docker-compose.yml, docker-compose.yaml)."
  type        = string
  default     = null
}

variable "labels" {
  description = "Labels kept in the host's record of the sandbox, e.g. the CI job and commit. Changing them updates the sandbox in place."
  type        = map(string)
  default     = {}
  nullable    = false
}

variable "ttl" {
  description = "Lifetime of the sandbox, a duration such as \"90m\" or \"4h\". null: the profile's (2h for profile.compose-e2e). Changing it moves expires_at in place."
  type        = string
  default     = null
}

variable "env" {
  description = "Environment written to the sandbox's workspace as the compose .env (mode 0600): available to compose interpolation. Never stored in the host's record. Changing it replaces the sandbox."
  type        = map(string)
  default     = {}
  nullable    = false
  sensitive   = true
}

variable "checkpoint" {
  description = "Also take a checkpoint (a sandboxer_snapshot) of the sandbox's workspace once it is ready."
  type        = bool
  default     = false
  nullable    = false
}

variable "checkpoint_name" {
  description = "Name of the checkpoint, when checkpoint is true."
  type        = string
  default     = "ci-checkpoint"
  nullable    = false
}

variable "published_ports" {
  description = "\"free\": each port the compose file publishes gets a free host port per sandbox, so copies of the stack run side by side (read them from the endpoints output). \"as_written\": the file's own host ports."
  type        = string
  default     = "free"
  nullable    = false

  validation {
    condition     = contains(["free", "as_written"], var.published_ports)
    error_message = "published_ports is \"free\" or \"as_written\"."
  }
}

variable "wait_for_ports" {
  description = "Ready only once every published TCP port accepts a connection on the host."
  type        = bool
  default     = false
  nullable    = false
}

variable "desired_state" {
  description = "\"running\", or \"stopped\": every container of the stack stopped in place (workspace, volumes and networks kept), e.g. overnight. Changing it stops or starts the stack; it is never replaced for it."
  type        = string
  default     = "running"
  nullable    = false

  validation {
    condition     = contains(["running", "stopped"], var.desired_state)
    error_message = "desired_state is \"running\" or \"stopped\"."
  }
}

variable "migrate" {
  description = "A command run once in a service when the sandbox is created, e.g. a migration: { service = \"db\", command = [\"psql\", \"-f\", \"/migrations/all.sql\"] }. A non-zero exit fails the apply. null (the default): none."
  type = object({
    service = string
    command = list(string)
  })
  default = null
}
