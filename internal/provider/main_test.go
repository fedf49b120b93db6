package provider

import (
	"os"
	"testing"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/agent"
)

// TestMain lets this test binary serve as the checkpoint agent on hosts,
// as the provider binary does in production.
func TestMain(m *testing.M) {
	agent.RunIfRequested()
	code := m.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir) // best effort: a temporary directory
	}
	os.Exit(code)
}
