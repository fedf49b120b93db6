package backends

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
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

var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// CheckID rejects ids that could not have come from NewID-like generation,
// before they are used to build paths on a host (import ids are user input).
func CheckID(id string) error {
	if !idPattern.MatchString(id) {
		return fmt.Errorf("invalid sandbox id %q: expected lowercase letters, digits and dashes", id)
	}
	return nil
}
