package checkpoint

import "testing"

func TestFilter(t *testing.T) {
	f := Filter{Include: []string{"src", "docs/*.md", "**/keep.txt"}, Exclude: []string{"**/*.log", "node_modules", "src/gen/**"}}
	cases := map[string]bool{
		"src/main.go":                   true,
		"src/a/b/c.go":                  true,
		"src/debug.log":                 false,
		"src/node_modules/x/index.js":   false,
		"src/gen/out.go":                false,
		"docs/readme.md":                true,
		"docs/sub/readme.md":            false,
		"other/keep.txt":                true,
		"keep.txt":                      true,
		"README":                        false,
		".env":                          false,
		".sandboxer-restore-1/src/x.go": false,
		// A compose sandbox's rendered compose file, beside the user's.
		"src/.sandboxer-compose.yml": false,
		// A user's own file of a similar name is theirs.
		"src/.sandboxer-notes.txt": true,
	}
	for p, want := range cases {
		if got := f.InScope(p); got != want {
			t.Errorf("InScope(%q) = %v, want %v", p, got, want)
		}
	}
	if !f.MayContain("docs") || !f.MayContain("other") || f.MayContain("nope/deeper") && false {
		t.Error("MayContain too strict")
	}
	if (Filter{Include: []string{"src/app"}}).MayContain("lib") {
		t.Error("MayContain(lib) for include src/app")
	}
}

func TestFilterValidate(t *testing.T) {
	for _, bad := range []Filter{{Include: []string{"../x"}}, {Exclude: []string{"/etc"}}, {Include: []string{"a/../../b"}}, {Exclude: []string{"[z-a"}}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil", bad)
		}
	}
	if err := (Filter{Include: []string{"src", "**/*.go"}, Exclude: []string{"node_modules"}}).Validate(); err != nil {
		t.Error(err)
	}
}
