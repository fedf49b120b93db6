//go:build tools

// Package tools pins the versions of build tools in go.mod, so
// `go run <tool>` needs nothing installed and nothing downloaded at run time.
package tools

import (
	// Documentation generation: scripts/generate-docs.sh.
	_ "github.com/hashicorp/terraform-plugin-docs/cmd/tfplugindocs"
)
