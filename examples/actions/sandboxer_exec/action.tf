# A command run now in a service, its output streamed as it runs:
#
#   terraform apply -invoke=action.sandboxer_exec.seed
action "sandboxer_exec" "seed" {
  config {
    sandbox_id = sandboxer_sandbox.e2e.id
    service    = "web"
    command    = ["./manage.py", "loaddata", "fixtures/demo.json"]
    env        = { DJANGO_SETTINGS_MODULE = "app.settings.ci" }
    workdir    = "/app"
    timeout    = "2m"
  }
}
