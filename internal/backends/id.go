package backends

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
)

// NewID returns a fresh sandbox id: 12 lowercase hex digits, valid as a
// directory name and inside a compose project name.
func NewID() string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b)
}

// CheckID rejects ids that could not have come from NewID-like generation,
// before they are used to build paths on a host (import ids are user input).
func CheckID(id string) error {
	if !checkpoint.IDPattern.MatchString(id) {
		return fmt.Errorf("invalid sandbox id %q: expected %s", id, checkpoint.IDGrammar)
	}
	return nil
}
