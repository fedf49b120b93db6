terraform {
  # Terraform 1.11 and later, OpenTofu 1.11 and later (both read this the
  # same way; the tests in tests/ need `terraform test` / `tofu test`).
  required_version = ">= 1.11"

  required_providers {
    sandboxer = {
      source = "sand-boxer/sandboxer"
    }
  }
}
