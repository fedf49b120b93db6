package composessh_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/composessh"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// A wedged engine (dockerd 20.10 deadlocked on a network's mutex under 500
// teardowns) answers some calls and never returns from others. A docker on
// the host's PATH that hangs in every operation but `version` while a flag
// file exists stands in for it. The destroy fails at its deadline naming
// the engine and the operation, nothing it started is left running on the
// host, and the next destroy, with the engine back, removes everything.
func TestTeardownNamesAWedgedEngine(t *testing.T) {
	testharness.RequireDocker(t)
	real, err := exec.LookPath("docker")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	wedged := filepath.Join(bin, "wedged")
	const hang = "sleep 6011" // what no other process on the host runs
	wrapper := "#!/bin/sh\nif [ -e " + wedged + " ] && [ \"$1\" != version ]; then exec " + hang + "; fi\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "docker"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	d := testharness.StartPrivateSSHD(t, "SetEnv PATH="+bin+":"+os.Getenv("PATH"))
	tr, err := hosts.NewSSH(d.SSHConfig("wedged"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	h := &hosts.Host{Transport: tr, RootDir: t.TempDir()}
	reg := backends.NewRegistry(composessh.New(os.Getenv("SANDBOXER_COMPOSE_CMD")))
	sb, err := reg.Create(ctx(t), backends.Request{ID: backends.NewID(), Profile: profile(t), Host: h,
		Inputs: map[string]string{"repo": testharness.ComposeRepo(t, testharness.Image(t), "web")}})
	if err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(wedged, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = reg.Destroy(dctx, h, sb.ID)
	// Its first engine operation, the listing of what runs before the stop.
	if err == nil || !strings.Contains(err.Error(), `the container engine on host "wedged" did not finish `+"`docker ps`") ||
		!strings.Contains(err.Error(), "still answers") {
		t.Fatalf("destroy against a wedged engine: %v", err)
	}
	t.Log(err)
	// The command was killed on the host with its shell's process group.
	for deadline := time.Now().Add(20 * time.Second); exec.Command("pgrep", "-f", hang).Run() == nil; {
		if time.Now().After(deadline) {
			t.Fatalf("%q still runs on the host after the destroy gave up", hang)
		}
		time.Sleep(50 * time.Millisecond) // polling for the kill to land
	}

	if err := os.Remove(wedged); err != nil {
		t.Fatal(err)
	}
	if _, _, err := reg.Get(ctx(t), h, sb.ID); err != nil {
		t.Fatalf("the record of a sandbox not removed is gone: %v", err)
	}
	if err := reg.Destroy(ctx(t), h, sb.ID); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(t, sb.ComposeProject); left != "" {
		t.Fatalf("left on the host: %s", left)
	}
}
