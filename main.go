// Command terraform-provider-sandboxer serves the sandboxer provider to
// Terraform and OpenTofu over the plugin protocol.
package main

import (
	"context"
	"flag"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/agent"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/provider"
)

// version is set by goreleaser (-ldflags "-X main.version=...").
var version = "dev"

func main() {
	// The same binary is the checkpoint agent on hosts (see internal/agent).
	agent.RunIfRequested()

	var debug bool
	flag.BoolVar(&debug, "debug", false, "run with support for debuggers like delve")
	flag.Parse()

	err := providerserver.Serve(context.Background(), provider.New(version), providerserver.ServeOpts{
		Address: "registry.terraform.io/sand-boxer/sandboxer",
		Debug:   debug,
	})
	if err != nil {
		log.Fatal(err)
	}
}
