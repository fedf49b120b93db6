package provider

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// The provider process killed (SIGKILL to the terraform CLI's process
// group, the provider with it) while a compose sandbox waits for a
// readiness that the test never grants: the host record is there without
// ready_at; once its create deadline (the resource's create timeout) has
// passed, the inventory lists the sandbox in stale_sandbox_ids, and the
// reaper the create installed removes its containers, network, volume,
// workspace, network reservation and record.
func TestAccSandbox_providerKilledMidCreate(t *testing.T) {
	testAccPreCheck(t)
	testharness.RequireDocker(t)
	tf := newDevCLI(t)
	h := newAccHost(t)
	root := h.rootDir
	repo := faultComposeRepo(t, t.TempDir()) // the gate is never opened
	provider := devCLIHeader + fmt.Sprintf(`
provider "sandboxer" {
  host {
    name             = "harness"
    address          = %q
    user             = %q
    private_key_file = %q
    known_hosts_file = %q
    root_dir         = %q
    reaper           = true
  }
}
`, testharness.Env(t, "SANDBOXER_TEST_SSH_ADDR"), testharness.Env(t, "SANDBOXER_TEST_SSH_USER"),
		testharness.Env(t, "SANDBOXER_TEST_SSH_KEY"), testharness.Env(t, "SANDBOXER_TEST_KNOWN_HOSTS"), root)
	host := testharness.SSHHost(t)
	host.RootDir = root
	t.Cleanup(func() {
		// The reaper's crontab line (the create installed it), and what a
		// failed run may have left in the shared engine.
		_ = backends.UninstallReaper(context.Background(), host) // best effort: the test is over
		for _, id := range recordIDs(root) {
			_ = exec.Command("sh", "-c", `f=label=com.docker.compose.project=$1
docker rm -f -v $(docker ps -aq --filter "$f"); docker network rm $(docker network ls -q --filter "$f"); docker volume rm -f $(docker volume ls -q --filter "$f")`,
				"sh", composeProjectOf(id)).Run() // best effort
		}
	})

	work := tf.dir(provider + fmt.Sprintf(`
resource "sandboxer_sandbox" "s" {
  profile = "profile.compose-e2e"
  host    = "harness"
  inputs  = { repo = %q }
  timeouts {
    create = "40s"
  }
}
`, repo))
	apply := tf.start(work, "apply", "-auto-approve")
	var id string
	waitOrFail(t, 2*time.Minute, "the sandbox's record and running container", func() bool {
		if ids := recordIDs(root); len(ids) == 1 {
			id = ids[0]
			out, _ := exec.Command("docker", "ps", "-q", "--filter", "status=running", "--filter", "label=com.docker.compose.project="+composeProjectOf(id)).Output()
			return len(strings.TrimSpace(string(out))) > 0
		}
		return false
	})
	apply.kill(t)

	var rec backends.Sandbox
	raw, err := os.ReadFile(filepath.Join(root, ".sandboxer", "sandboxes", id+".json"))
	if err == nil {
		err = json.Unmarshal(raw, &rec)
	}
	if err != nil || rec.ReadyAt != nil || rec.CreateDeadline == nil || rec.CreateDeadline.After(time.Now().Add(45*time.Second)) {
		t.Fatalf("the killed create's record (want no ready_at, a create_deadline within the 40s timeout): %s %v", raw, err)
	}
	inventory := tf.dir(provider + `
data "sandboxer_host_inventory" "h" {
  host = "harness"
}
output "ids" {
  value = [for s in data.sandboxer_host_inventory.h.sandboxes : s.id]
}
output "stale" {
  value = data.sandboxer_host_inventory.h.stale_sandbox_ids
}
`)
	listed := func() (ids, stale []string) {
		t.Helper()
		tf.run(inventory, "apply", "-auto-approve")
		var out struct {
			IDs   struct{ Value []string } `json:"ids"`
			Stale struct{ Value []string } `json:"stale"`
		}
		if err := json.Unmarshal([]byte(tf.run(inventory, "output", "-json")), &out); err != nil {
			t.Fatal(err)
		}
		return out.IDs.Value, out.Stale.Value
	}
	t.Logf("create of %s killed; its create deadline is %s away", id, time.Until(*rec.CreateDeadline).Round(time.Second))
	// Still within its deadline (when there is time to ask): listed, not stale.
	if time.Until(*rec.CreateDeadline) > 15*time.Second {
		ids, stale := listed()
		if !slices.Contains(ids, id) || slices.Contains(stale, id) {
			t.Fatalf("within its create deadline the inventory lists %v, stale %v; want %s listed, not stale", ids, stale, id)
		}
	}
	waitOrFail(t, time.Minute, "the create deadline in the record to pass", func() bool { return time.Now().After(rec.CreateDeadline.Add(time.Second)) })
	if _, stale := listed(); !slices.Contains(stale, id) {
		t.Fatalf("after its create deadline the inventory's stale_sandbox_ids are %v, want %s among them", stale, id)
	}

	// The reaper, on demand, as cron would run it.
	reaped, err := backends.RunReaper(t.Context(), host)
	if err != nil || !slices.Equal(reaped, []string{id}) {
		t.Fatalf("the reaper removed %v (%v), want %s", reaped, err, id)
	}
	if left := testharness.ComposeLeftovers(t, composeProjectOf(id)); len(left) > 0 {
		t.Errorf("the reaper left in docker: %s", strings.Join(left, ", "))
	}
	if left := rootLeftovers(root); len(left) > 0 {
		t.Errorf("the reaper left in the root directory: %s", strings.Join(left, ", "))
	}
}

// The provider process killed while a snapshot's capture writes the store
// (its temporary files observed): no manifest, no object whose content is
// not its name; the agent on the host stops by itself once its client is
// gone; and the next apply takes the snapshot, which restores byte for
// byte into a new sandbox. Destroy then leaves nothing.
func TestAccSnapshot_providerKilledMidCapture(t *testing.T) {
	testAccPreCheck(t)
	tf := newDevCLI(t)
	h := newAccHost(t)
	root := h.rootDir
	store := filepath.Join(root, ".sandboxer", "store")
	sandbox := devCLIHeader + fmt.Sprintf(`
provider "sandboxer" {
  host {
    name             = "harness"
    address          = %q
    user             = %q
    private_key_file = %q
    known_hosts_file = %q
    root_dir         = %q
  }
}

resource "sandboxer_sandbox" "s" {
  profile = "profile.workspace"
  host    = "harness"
}
output "ws" {
  value = sandboxer_sandbox.s.workspace_dir
}
`, testharness.Env(t, "SANDBOXER_TEST_SSH_ADDR"), testharness.Env(t, "SANDBOXER_TEST_SSH_USER"),
		testharness.Env(t, "SANDBOXER_TEST_SSH_KEY"), testharness.Env(t, "SANDBOXER_TEST_KNOWN_HOSTS"), root)
	work := tf.dir(sandbox)
	tf.run(work, "apply", "-auto-approve")
	destroyed := false
	t.Cleanup(func() {
		if !destroyed {
			_, _ = tf.try(work, "destroy", "-auto-approve") // best effort: the test failed already
		}
	})
	ws := strings.TrimSpace(tf.run(work, "output", "-raw", "ws"))

	// Enough data that the capture is seen at work: 24 files of 16 MiB
	// that do not repeat.
	want := map[string]string{}
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], uint64(time.Now().UnixNano()))
	rng := rand.NewChaCha8(seed)
	buf := make([]byte, 16<<20)
	for i := range 24 {
		_, _ = rng.Read(buf) // never fails
		rel := fmt.Sprintf("data/part-%02d.bin", i)
		if err := os.MkdirAll(filepath.Join(ws, "data"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, rel), buf, 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(buf)
		want[rel] = hex.EncodeToString(sum[:])
	}

	snapshot := sandbox + `
resource "sandboxer_snapshot" "snap" {
  sandbox_id = sandboxer_sandbox.s.id
  name       = "big"
}
`
	tf.write(work, snapshot)
	apply := tf.start(work, "apply", "-auto-approve")
	waitOrFail(t, 2*time.Minute, "the capture's temporary files in the store", func() bool {
		found, _ := filepath.Glob(filepath.Join(store, "tmp", "*"))
		return len(found) > 0
	})
	agents := processesUnder(filepath.Join(root, ".sandboxer", "bin"))
	apply.kill(t)
	// The agent runs on the host under sshd, not in the killed group: it
	// must see its client gone and stop by itself.
	waitOrFail(t, time.Minute, "the agent on the host to stop", func() bool { return len(processesUnder(filepath.Join(root, ".sandboxer", "bin"))) == 0 })

	objects, _ := filepath.Glob(filepath.Join(store, "objects", "*", "*"))
	debris, _ := filepath.Glob(filepath.Join(store, "tmp", "*"))
	t.Logf("killed during the capture (agent: %q); %d of 24 objects stored, %d temporary files left", agents, len(objects), len(debris))
	if found, _ := filepath.Glob(filepath.Join(store, "snapshots", "*.json")); len(found) > 0 {
		t.Fatalf("the killed capture wrote a manifest: %v", found)
	}
	checkObjects(t, store)

	// The next apply takes the snapshot; a restore into a new sandbox
	// gives back every byte.
	tf.write(work, snapshot+`
resource "sandboxer_restore" "copy" {
  snapshot_id = sandboxer_snapshot.snap.id
}
output "restored" {
  value = sandboxer_restore.copy.workspace_dir
}
`)
	tf.run(work, "apply", "-auto-approve")
	if found, _ := filepath.Glob(filepath.Join(store, "snapshots", "*.json")); len(found) != 1 {
		t.Fatalf("after the second apply the store has manifests %v, want one", found)
	}
	checkObjects(t, store)
	restored := strings.TrimSpace(tf.run(work, "output", "-raw", "restored"))
	for rel, sum := range want {
		data, err := os.ReadFile(filepath.Join(restored, rel))
		got := sha256.Sum256(data)
		if err != nil || hex.EncodeToString(got[:]) != sum {
			t.Errorf("restored %s: %v, sha256 %x, want %s", rel, err, got, sum)
		}
	}

	tf.run(work, "destroy", "-auto-approve")
	destroyed = true
	left := rootLeftovers(root)
	for _, pattern := range []string{"snapshots/*", "objects/*/*"} {
		found, _ := filepath.Glob(filepath.Join(store, pattern))
		left = append(left, found...)
	}
	if len(left) > 0 {
		t.Fatalf("destroy left: %s", strings.Join(left, ", "))
	}
}

// waitOrFail polls cond, an observable condition, until it holds or
// timeout passes, failing the test then.
func waitOrFail(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := waitFor(timeout, what, cond); err != nil {
		t.Fatal(err)
	}
}

// recordIDs lists the sandbox records in a root directory.
func recordIDs(root string) []string {
	found, _ := filepath.Glob(filepath.Join(root, ".sandboxer", "sandboxes", "*.json")) // the pattern is valid
	var ids []string
	for _, f := range found {
		ids = append(ids, strings.TrimSuffix(filepath.Base(f), ".json"))
	}
	return ids
}

func composeProjectOf(id string) string { return "sbx-" + id }

// processesUnder lists the processes whose command line names a path
// under dir (the agents a root directory's bin holds).
func processesUnder(dir string) []string {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline") // the pattern is valid
	var found []string
	for _, p := range procs {
		data, err := os.ReadFile(p)
		if err == nil && bytes.Contains(data, []byte(dir+"/")) {
			found = append(found, strings.ReplaceAll(string(data), "\x00", " "))
		}
	}
	return found
}

// checkObjects fails the test for any object in the store whose content is
// not what its name says.
func checkObjects(t *testing.T, store string) {
	t.Helper()
	if err := checkpoint.VerifyObjects(store); err != nil {
		t.Errorf("a half-written object under a name a later snapshot trusts: %v", err)
	}
}
