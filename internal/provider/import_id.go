package provider

import (
	"fmt"
	"strings"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
)

// parseImportID splits the import id grammar shared by every resource:
// HOST/ID, where ID follows the id grammar (checkpoint.IDPattern) and HOST
// is a host name without "/" or white space. what names the second part in
// the error message. An id such as `bar/../../etc` or `bar/$(id)` is
// refused here, before any host is contacted.
func parseImportID(raw, what string) (host, id string, err error) {
	host, id, ok := strings.Cut(raw, "/")
	if !ok {
		return "", "", fmt.Errorf("import id %q must be HOST/%s, e.g. local/3f9c2a7b1d0e", raw, what)
	}
	return checkHostID(host, id, fmt.Sprintf("import id %q must be HOST/%s", raw, what), what)
}

// checkHostID holds a host and an id given for an import to the rules of
// parseImportID; rule says what the input must be, for the error.
func checkHostID(host, id, rule, what string) (string, string, error) {
	if host == "" || id == "" || strings.ContainsFunc(host, isSpaceOrControl) || strings.Contains(host, "/") {
		return "", "", fmt.Errorf("%s, e.g. local/3f9c2a7b1d0e", rule)
	}
	if !checkpoint.IDPattern.MatchString(id) {
		return "", "", fmt.Errorf("%s, and %s %q is not an id: ids are %s", rule, what, id, checkpoint.IDGrammar)
	}
	return host, id, nil
}

func isSpaceOrControl(r rune) bool { return r <= ' ' || r == 0x7f }
