package provider

import (
	"strings"
	"testing"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
)

// Import ids are user input: accepted only as HOST/ID with a valid id and
// a host name without "/" or white space; anything else is refused naming
// the form.
func FuzzParseImportID(f *testing.F) {
	for _, s := range []string{"local/3f9c2a7b1d0e", "build/snap-0a1b", "bar/../../etc", "bar/$(id)", "a/b/c", "/x", "x/", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		host, id, err := parseImportID(raw, "ID")
		if err != nil {
			if !strings.Contains(err.Error(), "HOST/ID") {
				t.Fatalf("parseImportID(%q): %v does not name the form", raw, err)
			}
			return
		}
		if host+"/"+id != raw || !checkpoint.IDPattern.MatchString(id) || host == "" ||
			strings.ContainsFunc(host, func(r rune) bool { return r == '/' || r <= ' ' || r == 0x7f }) {
			t.Fatalf("parseImportID(%q) accepted host %q, id %q", raw, host, id)
		}
	})
}
