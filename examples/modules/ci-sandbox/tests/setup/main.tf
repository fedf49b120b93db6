# The first run of tests/harness.tftest.hcl: checks the harness values given
# on the command line before anything else runs, and declares them, so that
# the provider block of the test file can read them as var.* under both
# `terraform test` and `tofu test`. Later runs read image and test_run from
# its outputs (test_run may be left out). It creates nothing.

terraform {
  required_version = ">= 1.11"

  # Not used here, but named like the module under test names it, so that
  # "sandboxer" means the same provider in every run of the test file.
  required_providers {
    sandboxer = {
      source = "sand-boxer/sandboxer"
    }
  }
}

variable "ssh_address" {
  description = "host:port of the harness's SSH server."
  type        = string

  validation {
    condition     = can(regex("^[^:]+:[0-9]+$", var.ssh_address))
    error_message = "ssh_address must be host:port, e.g. 127.0.0.1:2222."
  }
}

variable "ssh_user" {
  description = "SSH user on the harness host."
  type        = string

  validation {
    condition     = length(var.ssh_user) > 0
    error_message = "ssh_user is empty."
  }
}

variable "ssh_private_key_file" {
  description = "Private key file for the SSH user."
  type        = string

  validation {
    condition     = fileexists(var.ssh_private_key_file)
    error_message = "ssh_private_key_file does not name an existing file."
  }
}

variable "ssh_known_hosts_file" {
  description = "known_hosts file holding the harness host's key."
  type        = string

  validation {
    condition     = fileexists(var.ssh_known_hosts_file)
    error_message = "ssh_known_hosts_file does not name an existing file."
  }
}

variable "image" {
  description = "Image of the compose services, present on the harness host (nothing is pulled)."
  type        = string

  validation {
    condition     = length(var.image) > 0
    error_message = "image is empty."
  }
}

variable "test_run" {
  description = "Label value put on the test's containers (sandboxer.test.run)."
  type        = string
  default     = "manual"
}

output "harness" {
  description = "The harness host, as user@address."
  value       = "${var.ssh_user}@${var.ssh_address}"
}

output "image" {
  value = var.image
}

output "test_run" {
  value = var.test_run
}
