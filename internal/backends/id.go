package backends

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
)

// NewID returns a fresh sandbox id: 12 lowercase hex digits, valid as a
// directory name and inside a compose project name, and never also a JSON
// number (all digits, or digits, e, digits: about 1 in 300 draws).
// Terraform's `query -generate-config-out` (1.14 to at least 1.16) writes
// a string attribute that is valid JSON as the value it decodes to: an id
// `0e1234567890` as `id = 0`, and `1e9999999999`, whose exponent does not
// fit, as `id = ` with no value, which is not HCL (docs/reliability.md).
func NewID() string {
	b := make([]byte, 6)
	for {
		if _, err := rand.Read(b); err != nil {
			panic(err) // crypto/rand does not fail on supported platforms
		}
		if id := hex.EncodeToString(b); !json.Valid([]byte(id)) {
			return id
		}
	}
}

// CheckID rejects ids that could not have come from NewID-like generation,
// before they are used to build paths on a host (import ids are user input).
func CheckID(id string) error {
	if !checkpoint.IDPattern.MatchString(id) {
		return fmt.Errorf("invalid sandbox id %q: expected %s", id, checkpoint.IDGrammar)
	}
	return nil
}
