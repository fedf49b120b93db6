// Command terraform-provider-sandboxer serves the sandboxer provider to
// Terraform and OpenTofu over the plugin protocol.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime/debug"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/agent"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/provider"
)

// version is the provider's version, set at build time with
// -ldflags "-X main.version=...": X.Y.Z by goreleaser for a release,
// X.Y.Z+dev.<time>.<commit> by make install (scripts/version.sh), "dev" for a
// plain go build.
var version = "dev"

func main() {
	// The same binary is the checkpoint agent on hosts (see internal/agent).
	agent.RunIfRequested()

	quietLogs()
	lessGC()

	var debug, showVersion bool
	flag.BoolVar(&debug, "debug", false, "run with support for debuggers like delve")
	flag.BoolVar(&showVersion, "version", false, "print the version and exit")
	flag.Parse()
	if showVersion {
		fmt.Println("terraform-provider-sandboxer " + version)
		return
	}

	err := providerserver.Serve(context.Background(), provider.New(version), providerserver.ServeOpts{
		Address: "registry.terraform.io/sand-boxer/sandboxer",
		Debug:   debug,
	})
	if err != nil {
		log.Fatal(err)
	}
}

// lessGC lets the heap grow to 5x the live data between collections (Go's
// default is 2x) unless GOGC says otherwise. A provider process lives for
// one Terraform step and its live heap is a few MiB, while the plugin
// framework allocates heavily per resource: in a plan of 100 resources the
// collector took a fifth of the provider's CPU at the default.
func lessGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(400)
	}
}

// quietLogs turns the plugin SDKs' and the provider's logs off when nobody
// asked for logs. The SDKs default to TRACE and encode every line as JSON
// for Terraform, which throws it away unless TF_LOG (or another TF_LOG_*
// variable, which Terraform passes on to the provider) is set: in a plan of
// 100 resources that encoding was a third of the provider's CPU.
func quietLogs() {
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "TF_LOG") {
			return
		}
	}
	for _, k := range []string{"TF_LOG_SDK", "TF_LOG_SDK_PROTO", "TF_LOG_SDK_FRAMEWORK", "TF_LOG_PROVIDER"} {
		_ = os.Setenv(k, "OFF") // never fails for a valid name
	}
}
