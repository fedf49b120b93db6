package catalog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestBuiltinProfilesParse(t *testing.T) {
	c, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"profile.compose-e2e", "profile.compose-checkpoint", "profile.sandbox-canary",
		"profile.vm-haskell-build", "profile.saas-stub", "profile.burst-sandbox", "profile.workspace"} {
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

func TestBuiltinExtensionsDeclared(t *testing.T) {
	c, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.ExtensionNames(), ","); got != "ext.compose-k8s,ext.compose-ssh,ext.saas-stub,ext.swarm,ext.vm-packer" {
		t.Fatalf("extensions %s", got)
	}
	x, _ := c.Extension("ext.saas-stub")
	if x.Kind != "metered" || x.SupportsSnapshots {
		t.Fatalf("saas-stub declaration %+v", x)
	}
	p, _ := c.Get("profile.burst-sandbox")
	if p.Fallback != "ext.compose-ssh" || p.HourlyPriceUSD <= 0 || p.TTLDuration() != time.Hour {
		t.Fatalf("burst profile %+v", p)
	}
}

func writeProfile(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadUserFilesOverrideBuiltins(t *testing.T) {
	dir := t.TempDir()
	writeProfile(t, dir, "profile.sandbox-canary.yaml", "name: profile.sandbox-canary\nversion: \"9\"\nextension: ext.compose-ssh\nsettings:\n  image: local/canary:1\n")
	writeProfile(t, dir, "profile.mine.yaml", "name: profile.mine\nversion: \"1\"\nextension: ext.vm-packer\nplacement: [gpu-1]\nttl: 30m\n")
	writeProfile(t, dir, "notes.txt", "ignored")
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	canary, _ := c.Get("profile.sandbox-canary")
	if canary.Settings["image"] != "local/canary:1" || canary.Source != filepath.Join(dir, "profile.sandbox-canary.yaml") {
		t.Fatalf("override not applied or source not shown: %+v", canary)
	}
	mine, err := c.Get("profile.mine")
	if err != nil || mine.Placement[0] != "gpu-1" || mine.TTLDuration() != 30*time.Minute {
		t.Fatalf("user profile: %+v %v", mine, err)
	}
	if ws, _ := c.Get("profile.workspace"); ws.Source != "built-in" {
		t.Fatal("built-ins must stay")
	}
}

func TestLoadBrokenFilesNameFileAndField(t *testing.T) {
	cases := map[string]struct{ file, body, want string }{
		"bad ttl":            {"profile.x.yaml", "name: profile.x\nextension: ext.vm-packer\nttl: soon\n", "field ttl"},
		"unknown extension":  {"profile.x.yaml", "name: profile.x\nextension: ext.nope\n", "field extension: unknown extension"},
		"name mismatch":      {"profile.x.yaml", "name: profile.y\nextension: ext.vm-packer\n", "field name"},
		"typo":               {"profile.x.yaml", "name: profile.x\nextension: ext.vm-packer\nplacment: [a]\n", "placment"},
		"negative price":     {"profile.x.yaml", "name: profile.x\nextension: ext.vm-packer\nhourly_price_usd: -1\n", "field hourly_price_usd"},
		"bad quiesce":        {"profile.x.yaml", "name: profile.x\nextension: ext.vm-packer\nsnapshots: {quiesce: freeze}\n", "field snapshots.quiesce"},
		"bad extension kind": {"ext.x.yaml", "name: ext.x\nkind: cloud\n", "field kind"},
	}
	for name, c := range cases {
		dir := t.TempDir()
		writeProfile(t, dir, c.file, c.body)
		_, err := Load(dir)
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, c.file)) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v", name, err)
		}
	}
}
