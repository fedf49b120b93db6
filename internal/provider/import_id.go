package provider

import (
	"fmt"
	"strings"
)

// parseImportID splits the import id grammar shared by every resource:
// HOST/ID. what names the second part in the error message.
func parseImportID(raw, what string) (host, id string, err error) {
	host, id, ok := strings.Cut(raw, "/")
	if !ok || host == "" || id == "" || strings.Contains(id, "/") {
		return "", "", fmt.Errorf("import id %q must be HOST/%s, e.g. local/3f9c2a7b1d0e", raw, what)
	}
	return host, id, nil
}
