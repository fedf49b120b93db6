# HOST/ID: the host's name in the provider block, then the sandbox id.
terraform import sandboxer_sandbox.example local/3f9c2a7b1d0e
