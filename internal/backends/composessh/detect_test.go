package composessh_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/composessh"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// The compose command detected by one provider process is kept on the
// host by its first create, and the next process takes it from there
// while the files it depends on are unchanged; changed, it detects again.
// A detection alone writes nothing.
func TestDetectionKeptOnTheHost(t *testing.T) {
	testharness.RequireDocker(t)
	if os.Getenv("SANDBOXER_COMPOSE_CMD") != "" {
		t.Skip("a configured compose command is not detected")
	}
	h := testharness.SSHHost(t)
	cache := filepath.Join(h.RootDir, ".sandboxer", "compose-command")

	detected, err := composessh.New("").Compose(ctx(t), h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cache); !os.IsNotExist(err) {
		t.Fatalf("a detection alone wrote %s (%v)", cache, err)
	}

	e := composessh.New("")
	reg := backends.NewRegistry(e)
	sb, err := reg.Create(ctx(t), backends.Request{ID: backends.NewID(), Profile: profile(t), Host: h,
		Inputs: map[string]string{"repo": testharness.ComposeRepo(t, testharness.Image(t), "web")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Destroy(ctx(t), h, sb.ID); err != nil {
		t.Fatal(err)
	}
	kept, err := os.ReadFile(cache)
	if err != nil {
		t.Fatalf("the create kept no detection: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(kept), "\n"), "\n")
	if len(lines) < 2 || lines[len(lines)-1] != strings.Join(detected, " ") {
		t.Fatalf("kept %q, want the key, then %q", kept, strings.Join(detected, " "))
	}

	// Another process takes the kept one (made recognisable here).
	lines[len(lines)-1] = "/bin/echo kept"
	if err := os.WriteFile(cache, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := composessh.New("").Compose(ctx(t), h); err != nil || !slices.Equal(got, []string{"/bin/echo", "kept"}) {
		t.Fatalf("with the files unchanged, detected %q (%v), want the kept command", got, err)
	}

	// A file it depends on changed: detected again.
	if err := os.WriteFile(cache, []byte("/usr/bin/docker 1 2 3\n"+strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := composessh.New("").Compose(ctx(t), h); err != nil || !slices.Equal(got, detected) {
		t.Fatalf("with another key, detected %q (%v), want %q", got, err, detected)
	}
}
