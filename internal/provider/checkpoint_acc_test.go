package provider

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

func writeFile(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func fileIs(dir, rel, want string) error {
	got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		return fmt.Errorf("%s: %v", rel, err)
	}
	if string(got) != want {
		return fmt.Errorf("%s holds %q, want %q", rel, got, want)
	}
	return nil
}

func fileAbsent(dir, rel string) error {
	if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(rel))); err == nil {
		return fmt.Errorf("%s should not exist", rel)
	}
	return nil
}

// The checkpoint tutorial, end to end: create files, snapshot, corrupt and
// delete files, restore in place and verify byte for byte; restore into a
// new sandbox on another host while the source keeps running; diff; clone
// to another host; list; import.
func TestAccCheckpoint_tutorial(t *testing.T) {
	testAccPreCheck(t)
	testharness.RequireDocker(t)
	h := newAccHost(t)
	repo := testharness.ComposeRepo(t, testharness.Image(t), "web")
	big := strings.Repeat("0123456789abcdef", 64*1024) // 1 MiB
	var ws, project string

	sandbox := fmt.Sprintf(`
resource "sandboxer_sandbox" "app" {
  profile = "profile.compose-e2e"
  host    = "harness"
  inputs  = { repo = %q }
  env     = { TOKEN = "one", MODE = "dev" }
}
`, repo)
	good := `
resource "sandboxer_snapshot" "good" {
  sandbox_id    = sandboxer_sandbox.app.id
  name          = "known-good"
  description   = "before the breakage"
  exclude_paths = ["**/*.log"]
  include_env   = true
  quiesce       = "pause"
  metadata      = { ticket = "OPS-1" }
}
`
	broken := `
resource "sandboxer_snapshot" "broken" {
  sandbox_id  = sandboxer_sandbox.app.id
  host        = "harness"
  name        = "after-breakage"
  include_env = true
  exclude_paths = ["**/*.log"]
}

resource "sandboxer_restore" "in_place" {
  snapshot_id       = sandboxer_snapshot.good.id
  target_sandbox_id = sandboxer_sandbox.app.id
  prune             = true
  depends_on        = [sandboxer_snapshot.broken]
}

resource "sandboxer_restore" "fresh" {
  snapshot_id = sandboxer_snapshot.good.id
  profile     = "profile.workspace"
  host        = "harness2"
}

data "sandboxer_snapshot_diff" "what_broke" {
  from = sandboxer_snapshot.good.id
  to   = sandboxer_snapshot.broken.id
}
`
	clone := `
resource "sandboxer_snapshot" "replica" {
  source_snapshot_id = sandboxer_snapshot.good.id
  name               = "known-good-replica"
  host               = "harness2"
}

data "sandboxer_snapshots" "mine" {
  sandbox_id = sandboxer_sandbox.app.id
  depends_on = [sandboxer_snapshot.replica, sandboxer_snapshot.broken]
}
`
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             h.checkNothingLeft(t),
		Steps: []resource.TestStep{
			{
				Config: h.providerConfig(t) + sandbox,
				Check: func(s *terraform.State) error {
					ws = stateAttr(s, "sandboxer_sandbox.app", "workspace_dir")
					project = stateAttr(s, "sandboxer_sandbox.app", "compose_project")
					return nil
				},
			},
			{
				PreConfig: func() {
					writeFile(t, ws, "app/state.txt", "known good\n")
					writeFile(t, ws, "app/data.bin", big)
					writeFile(t, ws, "app/server.log", "noise\n")
				},
				Config: h.providerConfig(t) + sandbox + good,
				ConfigStateChecks: []statecheck.StateCheck{
					// docker-compose.yml, README.txt, app/state.txt, app/data.bin (the log is excluded)
					statecheck.ExpectKnownValue("sandboxer_snapshot.good", tfjsonpath.New("file_count"), knownvalue.Int64Exact(4)),
					statecheck.ExpectKnownValue("sandboxer_snapshot.good", tfjsonpath.New("host"), knownvalue.StringExact("harness")),
					statecheck.ExpectKnownValue("sandboxer_snapshot.good", tfjsonpath.New("env_names"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.StringExact("MODE"), knownvalue.StringExact("TOKEN")})),
					statecheck.ExpectKnownValue("sandboxer_snapshot.good", tfjsonpath.New("digest"), knownvalue.StringRegexp(regexp.MustCompile(`^sha256:[0-9a-f]{64}$`))),
				},
				Check: func(s *terraform.State) error {
					// The store's first snapshot: stored_bytes is what its
					// objects take on disk, the repetitive 1 MiB compressed.
					size := stateAttr(s, "sandboxer_snapshot.good", "size_bytes")
					stored := stateAttr(s, "sandboxer_snapshot.good", "stored_bytes")
					onDisk := objectBytes(t, filepath.Join(h.rootDir, ".sandboxer", "store"))
					if n, _ := strconv.Atoi(size); stored != strconv.FormatInt(onDisk, 10) || onDisk == 0 || onDisk > 100_000 || n <= len(big) {
						return fmt.Errorf("first snapshot: size %s, stored %s; objects take %d bytes", size, stored, onDisk)
					}
					out, _ := exec.Command("docker", "ps", "--filter", "label=com.docker.compose.project="+project, "--format", "{{.Status}}").Output()
					if strings.Contains(string(out), "Paused") || !strings.Contains(string(out), "Up") {
						return fmt.Errorf("source services after a paused snapshot: %q", out)
					}
					return nil
				},
			},
			{
				PreConfig: func() {
					writeFile(t, ws, "app/state.txt", "BROKEN\n")
					must(t, os.Remove(filepath.Join(ws, "app", "data.bin")))
					writeFile(t, ws, "app/junk.txt", "junk\n")
					writeFile(t, ws, ".env", "TOKEN=two\nMODE=dev\n")
				},
				Config: h.providerConfig(t) + sandbox + good + broken,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.sandboxer_snapshot_diff.what_broke", tfjsonpath.New("files_modified"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("app/state.txt")})),
					statecheck.ExpectKnownValue("data.sandboxer_snapshot_diff.what_broke", tfjsonpath.New("files_removed"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("app/data.bin")})),
					statecheck.ExpectKnownValue("data.sandboxer_snapshot_diff.what_broke", tfjsonpath.New("files_added"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("app/junk.txt")})),
					statecheck.ExpectKnownValue("data.sandboxer_snapshot_diff.what_broke", tfjsonpath.New("env_modified"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("TOKEN")})),
					statecheck.ExpectKnownValue("sandboxer_restore.fresh", tfjsonpath.New("host"), knownvalue.StringExact("harness2")),
					statecheck.ExpectKnownValue("sandboxer_restore.fresh", tfjsonpath.New("files_restored"), knownvalue.Int64Exact(4)),
					statecheck.ExpectKnownValue("sandboxer_sandbox.app", tfjsonpath.New("status"), knownvalue.StringExact("ready")),
				},
				Check: func(s *terraform.State) error {
					// In place: byte for byte, junk pruned, excluded log untouched, env back.
					for _, err := range []error{
						fileIs(ws, "app/state.txt", "known good\n"), fileIs(ws, "app/data.bin", big),
						fileAbsent(ws, "app/junk.txt"), fileIs(ws, "app/server.log", "noise\n"),
						fileIs(ws, ".env", "MODE=dev\nTOKEN=one\n"),
					} {
						if err != nil {
							return fmt.Errorf("in-place restore: %w", err)
						}
					}
					fresh := stateAttr(s, "sandboxer_restore.fresh", "workspace_dir")
					if !strings.HasPrefix(fresh, h.rootDir2) {
						return fmt.Errorf("new sandbox at %s, not on harness2", fresh)
					}
					if err := fileIs(fresh, "app/data.bin", big); err != nil {
						return fmt.Errorf("restore into a new sandbox: %w", err)
					}
					return fileIs(fresh, "app/state.txt", "known good\n")
				},
			},
			{
				Config: h.providerConfig(t) + sandbox + good + broken + clone,
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttrPair("sandboxer_snapshot.replica", "digest", "sandboxer_snapshot.good", "digest"),
					resource.TestCheckResourceAttr("sandboxer_snapshot.replica", "host", "harness2"),
					resource.TestCheckResourceAttr("data.sandboxer_snapshots.mine", "snapshots.#", "3"),
				),
			},
			{
				ResourceName:            "sandboxer_snapshot.good",
				ImportState:             true,
				ImportStateIdFunc:       importID("sandboxer_snapshot.good"),
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts", "quiesce"},
			},
			{
				// Deleted out of band: removed from state, the plan re-creates it.
				PreConfig: func() {
					found, _ := filepath.Glob(filepath.Join(h.rootDir2, ".sandboxer", "store", "snapshots", "*.json"))
					for _, f := range found {
						must(t, os.Remove(f))
					}
				},
				Config: h.providerConfig(t) + sandbox + good + broken + clone,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("sandboxer_snapshot.replica", plancheck.ResourceActionCreate),
				}},
			},
		},
	})
}

// Safety: bad paths at plan time; a corrupted object fails the restore
// naming the file with the target unchanged; symlinks restore as links and
// are never followed out of the workspace.
func TestAccCheckpoint_safety(t *testing.T) {
	testAccPreCheck(t)
	h := newAccHost(t)
	outside := t.TempDir()
	writeFile(t, outside, "victim.txt", "untouched\n")
	var ws string
	sandbox := `
resource "sandboxer_sandbox" "ws" {
  profile = "profile.workspace"
  host    = "harness"
}
`
	snap := `
resource "sandboxer_snapshot" "s" {
  sandbox_id = sandboxer_sandbox.ws.id
  name       = "with-a-link"
}
`
	restore := `
resource "sandboxer_restore" "back" {
  snapshot_id       = sandboxer_snapshot.s.id
  target_sandbox_id = sandboxer_sandbox.ws.id
}
`
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             h.checkNothingLeft(t),
		Steps: []resource.TestStep{
			{
				Config: h.providerConfig(t) + sandbox + `
resource "sandboxer_snapshot" "bad" {
  sandbox_id    = "0123456789ab"
  name          = "bad"
  include_paths = ["../../etc"]
}
`,
				PlanOnly:    true,
				ExpectError: wrapped(`Invalid Snapshot Paths[\s\S]*contains "\.\."`),
			},
			{
				Config: h.providerConfig(t) + sandbox + `
resource "sandboxer_snapshot" "bad" {
  sandbox_id    = "0123456789ab"
  name          = "bad"
  exclude_paths = ["/etc/passwd"]
}
`,
				PlanOnly:    true,
				ExpectError: wrapped(`Invalid Snapshot Paths[\s\S]*absolute`),
			},
			{
				Config: h.providerConfig(t) + sandbox,
				Check: func(s *terraform.State) error {
					ws = stateAttr(s, "sandboxer_sandbox.ws", "workspace_dir")
					return nil
				},
			},
			{
				PreConfig: func() {
					writeFile(t, ws, "a.txt", "original a\n")
					writeFile(t, ws, "b.txt", "original b\n")
					if err := os.Symlink(filepath.Join(outside, "victim.txt"), filepath.Join(ws, "escape")); err != nil {
						t.Fatal(err)
					}
				},
				Config: h.providerConfig(t) + sandbox + snap,
			},
			{
				// A corrupted object: the restore fails naming the file and
				// the workspace is unchanged.
				PreConfig: func() {
					objects, _ := filepath.Glob(filepath.Join(h.rootDir, ".sandboxer", "store", "objects", "*", "*"))
					for _, o := range objects {
						data, _ := os.ReadFile(o)
						if string(data) == "original b\n" {
							must(t, os.WriteFile(o, []byte("tampered b\n"), 0o600))
						}
					}
					writeFile(t, ws, "a.txt", "changed a\n")
				},
				Config:      h.providerConfig(t) + sandbox + snap + restore,
				ExpectError: wrapped(`Unable to Restore Snapshot[\s\S]*b\.txt[\s\S]*corrupt`),
				Check: func(*terraform.State) error {
					return fileIs(ws, "a.txt", "changed a\n")
				},
			},
			{
				// Repair the object; a link planted where the snapshot has the
				// link is replaced, not followed.
				PreConfig: func() {
					objects, _ := filepath.Glob(filepath.Join(h.rootDir, ".sandboxer", "store", "objects", "*", "*"))
					for _, o := range objects {
						if data, _ := os.ReadFile(o); string(data) == "tampered b\n" {
							must(t, os.WriteFile(o, []byte("original b\n"), 0o600))
						}
					}
					if err := fileIs(ws, "a.txt", "changed a\n"); err != nil {
						t.Fatalf("the failed restore changed the workspace: %v", err)
					}
				},
				Config: h.providerConfig(t) + sandbox + snap + restore,
				Check: func(*terraform.State) error {
					if err := fileIs(ws, "a.txt", "original a\n"); err != nil {
						return err
					}
					if target, err := os.Readlink(filepath.Join(ws, "escape")); err != nil || target != filepath.Join(outside, "victim.txt") {
						return fmt.Errorf("symlink not restored as a link: %q %v", target, err)
					}
					return fileIs(outside, "victim.txt", "untouched\n")
				},
			},
		},
	})
}

// objectBytes is what the objects of the store at dir take on disk.
func objectBytes(t *testing.T, store string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(filepath.Join(store, "objects"), func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
