# The baseline of scripts/bench-apply.sh: what users write by hand for the
# same job as ../provider: per sandbox a directory on the host, the repo
# copied in, `compose up -d`; destroy brings the project down and removes
# the directory. Built-in terraform_data with file and remote-exec
# provisioners (one SSH connection per provisioner, as Terraform makes them).
variable "n" { type = number }
variable "host" { type = string }
variable "port" { type = number }
variable "user" { type = string }
variable "private_key_file" { type = string }
variable "root_dir" { type = string }
variable "repo" { type = string }
variable "compose_command" { type = string }

resource "terraform_data" "s" {
  count = var.n
  # Destroy-time provisioners may only reference self: everything they need
  # is in input.
  input = {
    dir     = "${var.root_dir}/re-${count.index}"
    project = "bench-re-${count.index}"
    compose = var.compose_command
    host    = var.host
    port    = var.port
    user    = var.user
    key     = var.private_key_file
  }

  connection {
    type        = "ssh"
    host        = self.input.host
    port        = self.input.port
    user        = self.input.user
    private_key = file(self.input.key)
  }

  provisioner "remote-exec" {
    inline = ["mkdir -p ${self.input.dir}"]
  }
  provisioner "file" {
    source      = "${var.repo}/"
    destination = self.input.dir
  }
  provisioner "remote-exec" {
    inline = ["cd ${self.input.dir} && ${self.input.compose} -p ${self.input.project} up -d"]
  }
  provisioner "remote-exec" {
    when   = destroy
    inline = ["cd ${self.input.dir} && ${self.input.compose} -p ${self.input.project} down -v --remove-orphans -t 1; rm -rf ${self.input.dir}"]
  }
}
