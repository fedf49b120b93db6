# Runs the module against a real compose host reached over SSH. The host,
# the compose services' image and a label for this run's containers come
# from a variables file given on the command line, e.g. harness.tfvars.json:
#
#   {
#     "ssh_address": "127.0.0.1:2222",
#     "ssh_user": "root",
#     "ssh_private_key_file": "/path/to/client_key",
#     "ssh_known_hosts_file": "/path/to/known_hosts",
#     "image": "sandboxer-busybox:latest",
#     "test_run": "ci-1234"
#   }
#
#   terraform init && terraform test -var-file=harness.tfvars.json
#   tofu init && tofu test -var-file=harness.tfvars.json
#
# init installs the helper module tests/setup; with the provider from a
# dev_overrides CLI config, `get` does that without init.
#
# image is the compose services' image (nothing is pulled); test_run,
# optional, labels their containers (label sandboxer.test.run) so that a
# runner can check that the run left none behind.
#
# Give these in a variables file rather than with -var: the module does not
# declare them, and Terraform reads such a -var value as an expression
# (127.0.0.1:2222 is not one, and silently becomes null) where OpenTofu
# reads it as a string.
#
# scripts/test-module.sh in the provider's source runs this suite against
# the test harness. Every run on the module shares one state; the test
# command destroys what the apply runs created when the suite ends.

provider "sandboxer" {
  host {
    name             = "harness"
    address          = var.ssh_address
    user             = var.ssh_user
    private_key_file = var.ssh_private_key_file
    known_hosts_file = var.ssh_known_hosts_file
  }
}

# First: tests/setup checks the harness values and declares them. (OpenTofu
# reads the provider block above in the scope of the module under test until
# a run has been applied; this run gives it one that declares the
# variables.) It creates nothing.
run "setup" {
  command = apply

  module {
    source = "./tests/setup"
  }
}

# Plan-time: an empty repo_path is rejected by the module's validation.
run "rejects_empty_repo_path" {
  command = plan

  variables {
    repo_path = ""
    host      = "harness"
  }

  expect_failures = [var.repo_path]
}

# Plan-time: what the module asks the provider for, with the defaults.
run "plan_defaults" {
  command = plan

  variables {
    repo_path = "tests/fixtures/app"
    host      = "harness"
  }

  assert {
    condition     = sandboxer_sandbox.this.profile == "profile.compose-e2e"
    error_message = "The sandbox must use profile.compose-e2e."
  }

  assert {
    condition     = sandboxer_sandbox.this.extension == "ext.compose-ssh"
    error_message = "profile.compose-e2e must be served by ext.compose-ssh."
  }

  assert {
    condition     = sandboxer_sandbox.this.host == "harness"
    error_message = "The sandbox must be placed on the host it was given."
  }

  assert {
    condition     = sandboxer_sandbox.this.inputs["repo"] == abspath("tests/fixtures/app")
    error_message = "inputs.repo must be the absolute path of repo_path."
  }

  assert {
    condition     = startswith(sandboxer_sandbox.this.inputs["repo"], "/")
    error_message = "inputs.repo must be an absolute path."
  }

  assert {
    condition     = !contains(keys(sandboxer_sandbox.this.inputs), "compose_file")
    error_message = "compose_file must not be passed to the profile when it is null."
  }

  assert {
    condition     = length(sandboxer_snapshot.checkpoint) == 0
    error_message = "No checkpoint is planned unless checkpoint = true."
  }
}

# Plan-time: compose_file is passed through when set, and checkpoint plans
# one snapshot.
run "plan_compose_file_and_checkpoint" {
  command = plan

  variables {
    repo_path    = "tests/fixtures/app"
    host         = "harness"
    compose_file = "docker-compose.yml"
    checkpoint   = true
  }

  assert {
    condition     = sandboxer_sandbox.this.inputs["compose_file"] == "docker-compose.yml"
    error_message = "compose_file must be passed to the profile when set."
  }

  assert {
    condition     = length(sandboxer_snapshot.checkpoint) == 1
    error_message = "checkpoint = true must plan one snapshot."
  }
}

# The stack, for real: two services, up and ready on the harness host.
run "compose_stack" {
  command = apply

  variables {
    repo_path = "tests/fixtures/app"
    host      = "harness"
    env       = { IMAGE = run.setup.image, TEST_RUN = run.setup.test_run }
    labels    = { ci_job = "module-test" }
    ttl       = "30m"
  }

  assert {
    condition     = output.id != null && output.id != ""
    error_message = "The sandbox id must not be empty."
  }

  assert {
    condition     = output.host == "harness"
    error_message = "The host output must name the host the sandbox runs on."
  }

  assert {
    condition     = startswith(output.compose_project, "sbx-")
    error_message = "The compose project must be named sbx-<id>, got ${output.compose_project}."
  }

  assert {
    condition     = contains(output.services, "web") && contains(output.services, "worker")
    error_message = "The services output must list web and worker, got ${jsonencode(output.services)}."
  }

  assert {
    condition     = startswith(output.workspace_dir, "/")
    error_message = "workspace_dir must be an absolute path on the host."
  }

  assert {
    condition     = alltrue([for s in sandboxer_sandbox.this.services : s.state == "running"])
    error_message = "Every service must be running once apply returns."
  }

  assert {
    condition     = sandboxer_sandbox.this.status == "ready"
    error_message = "The sandbox must be ready once apply returns."
  }

  assert {
    condition     = output.checkpoint_id == null
    error_message = "checkpoint_id must be null without a checkpoint."
  }

  assert {
    condition     = startswith(output.endpoints["web:80"], "127.0.0.1:") && output.endpoints["web:80"] != "127.0.0.1:8080"
    error_message = "endpoints[\"web:80\"] must be a free port on the SSH host's address, got ${jsonencode(output.endpoints)}."
  }

  assert {
    condition     = output.service_ports["web"][0].target == 80 && output.service_ports["web"][0].address == output.endpoints["web:80"]
    error_message = "service_ports must list web's port 80 at its endpoint, got ${jsonencode(output.service_ports)}."
  }
}

# A checkpoint of the same sandbox: the sandbox stays (the label change is
# made in place) and a snapshot is added.
run "checkpoint" {
  command = apply

  variables {
    repo_path  = "tests/fixtures/app"
    host       = "harness"
    env        = { IMAGE = run.setup.image, TEST_RUN = run.setup.test_run }
    labels     = { ci_job = "module-test", checkpoint = "yes" }
    ttl        = "30m"
    checkpoint = true

    # Not a module variable: the sandbox id of the previous run, for the
    # assertion below (assertions cannot read run.* under OpenTofu).
    previous_id = run.compose_stack.id
  }

  assert {
    condition     = output.checkpoint_id != null
    error_message = "checkpoint_id must be set when checkpoint = true."
  }

  assert {
    condition     = output.id == var.previous_id
    error_message = "Taking a checkpoint must not replace the sandbox."
  }

  assert {
    condition     = sandboxer_snapshot.checkpoint[0].sandbox_id == output.id
    error_message = "The checkpoint must be of the module's sandbox."
  }

  assert {
    condition     = sandboxer_snapshot.checkpoint[0].file_count > 0
    error_message = "The checkpoint must hold the workspace's files."
  }
}

# Day two: a migration command at create, then the stack stopped in place
# overnight and started again, the same sandbox throughout.
run "migrate" {
  command = apply

  variables {
    repo_path = "tests/fixtures/app"
    host      = "harness"
    env       = { IMAGE = run.setup.image, TEST_RUN = run.setup.test_run }
    labels    = { ci_job = "module-test", checkpoint = "yes" }
    ttl       = "30m"
    migrate   = { service = "worker", command = ["sh", "-c", "echo migrated"] }
  }

  assert {
    condition     = nonsensitive(output.migrate_output) == "migrated\n"
    error_message = "The migrate command's output must be in migrate_output."
  }
}

run "stopped_overnight" {
  command = apply

  variables {
    repo_path     = "tests/fixtures/app"
    host          = "harness"
    env           = { IMAGE = run.setup.image, TEST_RUN = run.setup.test_run }
    labels        = { ci_job = "module-test", checkpoint = "yes" }
    ttl           = "30m"
    migrate       = { service = "worker", command = ["sh", "-c", "echo migrated"] }
    desired_state = "stopped"
    previous_id   = run.migrate.id
  }

  assert {
    condition     = output.status == "stopped" && length(output.endpoints) == 0
    error_message = "A stopped stack must say stopped, with no endpoints."
  }

  assert {
    condition     = output.id == var.previous_id
    error_message = "Stopping must not replace the sandbox."
  }
}

run "started_again" {
  command = apply

  variables {
    repo_path   = "tests/fixtures/app"
    host        = "harness"
    env         = { IMAGE = run.setup.image, TEST_RUN = run.setup.test_run }
    labels      = { ci_job = "module-test", checkpoint = "yes" }
    ttl         = "30m"
    migrate     = { service = "worker", command = ["sh", "-c", "echo migrated"] }
    previous_id = run.stopped_overnight.id
  }

  assert {
    condition     = output.status == "ready" && output.id == var.previous_id
    error_message = "Starting must bring the same sandbox back ready."
  }
}
