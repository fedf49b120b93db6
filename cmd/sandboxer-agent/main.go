// Command sandboxer-agent is the checkpoint agent on its own: what the
// provider installs and runs on an SSH host whenever there is one for the
// host's platform (a tenth of the provider's size), and the only agent for a
// host whose OS or architecture differs from the machine running Terraform
// (the provider's own executable serves otherwise). It speaks the same
// protocol, `sandboxer-agent __sandboxer_agent OP [REQUEST]` with JSON
// requests (on the command line or stdin) and answers (on stdout), and is
// not meant to be run by hand. See internal/agent.
package main

import (
	"fmt"
	"os"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/agent"
)

func main() {
	agent.RunIfRequested()
	fmt.Fprintf(os.Stderr, "sandboxer-agent is run by terraform-provider-sandboxer on its hosts (%s %s OP), not by hand\n", os.Args[0], agent.Command)
	os.Exit(2)
}
