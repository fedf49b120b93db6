package backends_test

import (
	"encoding/json"
	"testing"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
)

// No id is also a JSON number, which Terraform's generated configuration
// would write as a number, or as nothing (NewID). About 1 in 300 draws of
// 12 hex digits is one: 100,000 draws meet several.
func TestNewIDIsNeverAJSONNumber(t *testing.T) {
	for range 100_000 {
		id := backends.NewID()
		if json.Valid([]byte(id)) {
			t.Fatalf("NewID drew %q, a JSON number", id)
		}
		if err := backends.CheckID(id); err != nil {
			t.Fatal(err)
		}
	}
}
