package backends_test

import (
	"context"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/composessh"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// A compose stack's named volumes are captured with its workspace through
// helper containers (the harness host's docker; the store is the SSH
// user's), consistently while the stack is paused; broken out of band and
// restored in place byte for byte, owners, modes and links included;
// restored into a new sandbox while the source keeps writing; a corrupted
// volume object fails an in-place restore naming it, with the volume
// unchanged; and every volume goes with its sandbox's teardown.
func TestVolumeCheckpointsOverSSH(t *testing.T) {
	testharness.RequireDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	h := testharness.SSHHost(t)
	reg := backends.NewRegistry(composessh.New(os.Getenv("SANDBOXER_COMPOSE_CMD")))
	p := profile(t, "profile.compose-checkpoint")
	sb, err := reg.Create(ctx, backends.Request{ID: backends.NewID(), Profile: p, Host: h,
		Inputs: map[string]string{"repo": testharness.StatefulComposeRepo(t)}})
	if err != nil {
		t.Fatal(err)
	}
	projects := []string{sb.ComposeProject}
	defer func() {
		_ = reg.Destroy(context.Background(), h, sb.ID) // best-effort cleanup; checked below
	}()
	pairs, files := sb.ComposeProject+"_pairs", sb.ComposeProject+"_files"

	snap, err := reg.Snapshot(ctx, h, backends.SnapshotRequest{ID: "snap-" + sb.ID, SandboxID: sb.ID, Name: "good", Profile: p, Sandbox: sb})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(snap.VolumeNames, ",") != "files,pairs" {
		t.Fatalf("volumes captured: %v", snap.VolumeNames)
	}
	if _, st, _ := reg.Get(ctx, h, sb.ID); st.State != backends.StatusReady {
		t.Fatalf("source not ready after the snapshot: %+v", st)
	}
	owner := testharness.InVolume(t, files, "stat -c '%u:%g %a' /v/shared /v/shared/owned.txt; readlink /v/etc-link")

	// Broken out of band, restored in place.
	testharness.InVolume(t, pairs, "echo broken > /v/config")
	testharness.InVolume(t, files, "rm -f /v/etc-link; echo junk > /v/junk.txt; chown 0:0 /v/shared/owned.txt")
	if _, err := reg.RestoreInPlace(ctx, h, snap.ID, h, sb.ID, checkpoint.RestoreOptions{Files: true, Overwrite: true, Prune: true}); err != nil {
		t.Fatal(err)
	}
	if got := testharness.InVolume(t, pairs, "cat /v/config"); got != "original" {
		t.Errorf("config after the in-place restore: %q", got)
	}
	if got := testharness.InVolume(t, files, "stat -c '%u:%g %a' /v/shared /v/shared/owned.txt; readlink /v/etc-link"); got != owner {
		t.Errorf("owners, modes and links after the restore:\n%s\nwant\n%s", got, owner)
	}
	if got := testharness.InVolume(t, files, "ls /v/junk.txt 2>&1 || true"); !strings.Contains(got, "No such file") {
		t.Errorf("a file the snapshot lacks survived a pruning restore: %q", got)
	}
	if _, st, _ := reg.Get(ctx, h, sb.ID); st.State != backends.StatusReady {
		t.Fatalf("target not ready after the in-place restore: %+v", st)
	}

	// Into a new sandbox while the source keeps writing: the pair was cut
	// consistently (the writer was paused), the source's volumes untouched.
	nsb, _, err := reg.RestoreNew(ctx, h, snap.ID, backends.Request{ID: backends.NewID(), Profile: p, Host: h})
	if err != nil {
		t.Fatal(err)
	}
	projects = append(projects, nsb.ComposeProject)
	defer func() { _ = reg.Destroy(context.Background(), h, nsb.ID) }() // best-effort cleanup; checked below
	// The new writer goes on from the snapshot's numbers: compare a copy
	// taken while it is stopped.
	if out, err := exec.Command("docker", "stop", nsb.ComposeProject+"-writer-1").CombinedOutput(); err != nil {
		if out2, err2 := exec.Command("docker", "stop", nsb.ComposeProject+"_writer_1").CombinedOutput(); err2 != nil {
			t.Fatalf("docker stop: %s %s", out, out2)
		}
	}
	if got := testharness.InVolume(t, nsb.ComposeProject+"_pairs", `[ "$(cat /v/a)" = "$(cat /v/b)" ] && echo same || echo "a=$(cat /v/a) b=$(cat /v/b)"`); got != "same" {
		t.Errorf("the pair in the snapshot differs: %s", got)
	}
	if got := testharness.InVolume(t, nsb.ComposeProject+"_files", "stat -c '%u:%g %a' /v/shared /v/shared/owned.txt; readlink /v/etc-link"); got != owner {
		t.Errorf("new sandbox's volume:\n%s\nwant\n%s", got, owner)
	}

	// A corrupted object: the in-place restore fails naming the file, and
	// the volume keeps what it had.
	testharness.InVolume(t, pairs, "echo after > /v/config")
	data, err := os.ReadFile(filepath.Join(h.RootDir, ".sandboxer", "store", "snapshots", snap.ID+".json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := checkpoint.ParseManifest(snap.ID, data)
	if err != nil {
		t.Fatal(err)
	}
	for e := range m.Files() {
		if e.Path == "config" {
			for _, name := range []string{e.Digest[2:], e.Digest[2:] + ".zst"} {
				p := filepath.Join(h.RootDir, ".sandboxer", "store", "objects", e.Digest[:2], name)
				if _, err := os.Stat(p); err == nil {
					if err := os.WriteFile(p, []byte("tampered"), 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	_, err = reg.RestoreInPlace(ctx, h, snap.ID, h, sb.ID, checkpoint.RestoreOptions{Files: true, Overwrite: true, Prune: true})
	if err == nil || !strings.Contains(err.Error(), "volume:pairs/config") {
		t.Fatalf("restore from a corrupted object: %v", err)
	}
	if got := testharness.InVolume(t, pairs, "cat /v/config"); got != "after" {
		t.Errorf("the volume changed although the restore failed: %q", got)
	}

	for _, id := range []string{nsb.ID, sb.ID} {
		if err := reg.Destroy(ctx, h, id); err != nil {
			t.Fatal(err)
		}
	}
	if left := testharness.ComposeLeftovers(t, projects...); len(left) > 0 {
		t.Errorf("left after teardown: %v", left)
	}
}

// A volume the compose file names (`name: shared-data`) is the sandbox's
// own, under compose's name for it: two sandboxes never share it, a
// checkpoint restored into a new sandbox fills the new one's, and nothing
// of that fixed name is made on the host. The restored stack, whose compose
// file exists only in its workspace, gets its network's subnet from the
// host's pool like a stack created from a repo.
func TestVolumeWithAFixedNameIsTheSandboxes(t *testing.T) {
	testharness.RequireDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h := testharness.SSHHost(t)
	reg := backends.NewRegistry(composessh.New(os.Getenv("SANDBOXER_COMPOSE_CMD")))
	p := profile(t, "profile.compose-checkpoint")
	fixed := "sbxtest-fixed-" + backends.NewID()
	repo := t.TempDir()
	compose := `services:
  keeper:
    image: ` + testharness.Image(t) + `
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
    volumes: ["data:/data"]
volumes:
  data:
    name: ` + fixed + `
`
	if err := os.WriteFile(filepath.Join(repo, "compose.yaml"), []byte(compose), 0o644); err != nil {
		t.Fatal(err)
	}
	sb, err := reg.Create(ctx, backends.Request{ID: backends.NewID(), Profile: p, Host: h, Inputs: map[string]string{"repo": repo}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reg.Destroy(context.Background(), h, sb.ID) }() // best-effort; checked below
	testharness.InVolume(t, sb.ComposeProject+"_data", "echo kept > /v/state")
	snap, err := reg.Snapshot(ctx, h, backends.SnapshotRequest{ID: "snap-" + sb.ID, SandboxID: sb.ID, Name: "fixed", Profile: p, Sandbox: sb})
	if err != nil {
		t.Fatal(err)
	}
	nsb, _, err := reg.RestoreNew(ctx, h, snap.ID, backends.Request{ID: backends.NewID(), Profile: p, Host: h})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reg.Destroy(context.Background(), h, nsb.ID) }() // best-effort; checked below
	if got := strings.TrimSpace(testharness.InVolume(t, nsb.ComposeProject+"_data", "cat /v/state")); got != "kept" {
		t.Errorf("the new sandbox's volume holds %q", got)
	}
	out, err := exec.Command("docker", "network", "inspect", "-f", "{{range .IPAM.Config}}{{.Subnet}}{{end}}", nsb.ComposeProject+"_default").Output()
	subnet, perr := netip.ParsePrefix(strings.TrimSpace(string(out)))
	if err != nil || perr != nil || !nsb.NetworkOverride || subnet.Bits() != 27 || !composessh.DefaultNetworkPool.Contains(subnet.Addr()) ||
		strings.Join(nsb.Services, ",") != "keeper" {
		t.Errorf("the restored stack: network subnet %q (%v), override %v, services %v; want a /27 of %s, keeper", out, err, nsb.NetworkOverride, nsb.Services, composessh.DefaultNetworkPool)
	}
	if out, err := exec.Command("docker", "volume", "ls", "-q", "--filter", "name=^"+fixed+"$").Output(); err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("a volume of the fixed name exists: %q %v", out, err)
	}
	for _, id := range []string{sb.ID, nsb.ID} {
		if err := reg.Destroy(ctx, h, id); err != nil {
			t.Fatal(err)
		}
	}
	if left := testharness.ComposeLeftovers(t, sb.ComposeProject, nsb.ComposeProject); len(left) > 0 {
		t.Errorf("left: %v", left)
	}
	if err := reg.DeleteSnapshot(ctx, h, snap.ID); err != nil {
		t.Error(err)
	}
}
