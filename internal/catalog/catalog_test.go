package catalog

import (
	"strings"
	"testing"
)

func TestBuiltinProfilesParse(t *testing.T) {
	c, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"profile.compose-e2e", "profile.workspace"} {
		p, err := c.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		if p.Source != "built-in" || p.Version == "" || p.Description == "" {
			t.Errorf("%s: incomplete: %+v", name, p)
		}
	}
	if _, err := c.Get("profile.nope"); err == nil || !strings.Contains(err.Error(), "profile.workspace") {
		t.Fatalf("unknown profile error should list known ones, got %v", err)
	}
}

func TestParseRejectsUnknownFieldNamingFileAndField(t *testing.T) {
	_, err := Parse([]byte("name: profile.x\nextension: ext.vm-packer\nplacment: [a]\n"), "my/profile.x.yaml")
	if err == nil || !strings.Contains(err.Error(), "my/profile.x.yaml") || !strings.Contains(err.Error(), "placment") {
		t.Fatalf("got %v", err)
	}
}

func TestCheckInputs(t *testing.T) {
	c, _ := Builtin()
	p, _ := c.Get("profile.compose-e2e")
	if err := p.CheckInputs(map[string]string{"repo": "/x"}); err != nil {
		t.Fatal(err)
	}
	err := p.CheckInputs(map[string]string{"rpo": "/x"})
	if err == nil || !strings.Contains(err.Error(), `missing required input "repo"`) || !strings.Contains(err.Error(), `unknown input "rpo"`) {
		t.Fatalf("got %v", err)
	}
}
