package safepath

import "testing"

func TestRelative(t *testing.T) {
	for _, ok := range []string{"a", "a/b", "./a", "a..b", "..a/b", "node_modules", "**/*.log"} {
		if err := Relative(ok); err != nil {
			t.Errorf("Relative(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "/etc", "..", "../x", "a/../../b", "a/..", `a\..\b`, "\\x"} {
		if err := Relative(bad); err == nil {
			t.Errorf("Relative(%q) = nil, want an error", bad)
		}
	}
}

func TestNoParentSteps(t *testing.T) {
	if err := NoParentSteps("/srv/app"); err != nil {
		t.Error(err)
	}
	if err := NoParentSteps("/srv/../etc"); err == nil {
		t.Error("want error for ..")
	}
}

func TestExpandHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	for in, want := range map[string]string{
		"~":                    home,
		"~/.ssh/id_ed25519":    home + "/.ssh/id_ed25519",
		"/etc/ssh/known_hosts": "/etc/ssh/known_hosts",
		"keys/~/id":            "keys/~/id",
		"~other/.ssh/id":       "~other/.ssh/id",
		"":                     "",
	} {
		if got, err := ExpandHome(in); err != nil || got != want {
			t.Errorf("ExpandHome(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
