package provider

import (
	"fmt"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/composessh"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// volumeFacts is what a restore must bring back of the stateful stack's
// volumes: the config, and owners, modes and the link of "files".
const volumeFacts = "cat /v/config 2>/dev/null; stat -c '%u:%g %a' /v/shared /v/shared/owned.txt 2>/dev/null; readlink /v/etc-link 2>/dev/null; true"

// facts reads volumeFacts from a project's two volumes.
func facts(t *testing.T, project string) string {
	return testharness.InVolume(t, project+"_pairs", volumeFacts) + "\n" + testharness.InVolume(t, project+"_files", volumeFacts)
}

// Whole-stack checkpoints through Terraform: a compose-checkpoint sandbox's
// snapshot holds its named volumes; broken out of band, the volume is
// restored in place (the link to /etc as a link, owners and modes as they
// were); the diff names the volume's file; a restore into a new sandbox on
// another host block carries the volumes across, and destroy leaves no
// volume on either host.
func TestAccCheckpoint_volumes(t *testing.T) {
	testAccPreCheck(t)
	testharness.RequireDocker(t)
	h := newAccHost(t)
	repo := testharness.StatefulComposeRepo(t)
	var project, want string
	base := h.providerConfig(t) + fmt.Sprintf(`
resource "sandboxer_sandbox" "db" {
  profile = "profile.compose-checkpoint"
  host    = "harness"
  inputs  = { repo = %q }
}

resource "sandboxer_snapshot" "good" {
  sandbox_id = sandboxer_sandbox.db.id
  name       = "known-good"
}
`, repo)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             h.checkNothingLeft(t),
		Steps: []resource.TestStep{{
			Config: base,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("sandboxer_snapshot.good", tfjsonpath.New("volume_names"),
					knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("files"), knownvalue.StringExact("pairs")})),
				statecheck.ExpectKnownValue("sandboxer_snapshot.good", tfjsonpath.New("quiesce"), knownvalue.StringExact("pause")),
			},
			Check: func(s *terraform.State) error {
				project = stateAttr(s, "sandboxer_sandbox.db", "compose_project")
				want = facts(t, project)
				if !strings.HasPrefix(want, "original\n") || !strings.Contains(want, "1234:1234 2775") || !strings.Contains(want, "/etc") {
					return fmt.Errorf("the stack's volumes: %q", want)
				}
				return nil
			},
		}, {
			PreConfig: func() {
				testharness.InVolume(t, project+"_pairs", "echo broken > /v/config")
				testharness.InVolume(t, project+"_files", "rm /v/etc-link && mkdir /v/etc-link && chown 0:0 /v/shared/owned.txt")
			},
			Config: base + `
resource "sandboxer_snapshot" "broken" {
  sandbox_id      = sandboxer_sandbox.db.id
  name            = "broken"
  quiesce         = "stop"
  volumes         = ["pairs"]
}

data "sandboxer_snapshot_diff" "what_broke" {
  from = sandboxer_snapshot.good.id
  to   = sandboxer_snapshot.broken.id
}

resource "sandboxer_restore" "in_place" {
  snapshot_id       = sandboxer_snapshot.good.id
  target_sandbox_id = sandboxer_sandbox.db.id
  prune             = true
  depends_on        = [data.sandboxer_snapshot_diff.what_broke]
}

resource "sandboxer_restore" "elsewhere" {
  snapshot_id = sandboxer_snapshot.good.id
  profile     = "profile.compose-checkpoint"
  host        = "harness2"
}
`,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("sandboxer_snapshot.broken", tfjsonpath.New("volume_names"),
					knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("pairs")})),
			},
			Check: func(s *terraform.State) error {
				diff := s.RootModule().Resources["data.sandboxer_snapshot_diff.what_broke"].Primary.Attributes
				var modified []string
				for k, v := range diff {
					if strings.HasPrefix(k, "files_modified.") && k != "files_modified.#" {
						modified = append(modified, v)
					}
				}
				if !slices.Contains(modified, "volume:pairs/config") {
					return fmt.Errorf("the diff's modified files %v lack volume:pairs/config", modified)
				}
				if got := facts(t, project); got != want {
					return fmt.Errorf("in place, the volumes hold\n%s\nwant\n%s", got, want)
				}
				other := composessh.ProjectName(stateAttr(s, "sandboxer_restore.elsewhere", "sandbox_id"))
				if got := facts(t, other); got != want {
					return fmt.Errorf("on harness2, the new sandbox's volumes hold\n%s\nwant\n%s", got, want)
				}
				return nil
			},
		}},
	})
}

// A non-root SSH user in the docker group checkpoints and restores volumes
// (in place and into a new sandbox) whose files belong to root and to other
// users: through the helper containers, never by reading docker's data
// directory (a root user's agent reads it directly: the other tests).
func TestAccCheckpoint_volumesNonRootUser(t *testing.T) {
	testAccPreCheck(t)
	testharness.RequireDocker(t)
	name := testharness.Env(t, "SANDBOXER_TEST_SSH_NONROOT_USER")
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatalf("harness user %s: %v", name, err)
	}
	nr := newNonRoot(t, u)
	repo := testharness.StatefulComposeRepo(t)
	var project, want string
	config := nr.provider + fmt.Sprintf(`
resource "sandboxer_sandbox" "db" {
  profile = "profile.compose-checkpoint"
  host    = "ci"
  inputs  = { repo = %q }
}

resource "sandboxer_snapshot" "good" {
  sandbox_id = sandboxer_sandbox.db.id
  name       = "known-good"
}
`, repo)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             nr.acc.checkNothingLeft(t),
		Steps: []resource.TestStep{{
			Config: config,
			Check: func(s *terraform.State) error {
				project = stateAttr(s, "sandboxer_sandbox.db", "compose_project")
				want = facts(t, project)
				// What the helpers (root, in their containers) stored is the user's.
				objects, _ := filepath.Glob(filepath.Join(nr.acc.rootDir, ".sandboxer", "store", "objects", "*", "*"))
				if len(objects) == 0 {
					return fmt.Errorf("no objects in the store")
				}
				for _, o := range append(objects, filepath.Dir(objects[0])) {
					if err := nr.ownedBy(o); err != nil {
						return err
					}
				}
				return nil
			},
		}, {
			PreConfig: func() { testharness.InVolume(t, project+"_files", "echo junk > /v/shared/owned.txt") },
			Config: config + `
resource "sandboxer_restore" "in_place" {
  snapshot_id       = sandboxer_snapshot.good.id
  target_sandbox_id = sandboxer_sandbox.db.id
}

resource "sandboxer_restore" "copy" {
  snapshot_id = sandboxer_snapshot.good.id
  profile     = "profile.compose-checkpoint"
  host        = "ci"
}
`,
			Check: func(s *terraform.State) error {
				if got := facts(t, project); got != want {
					return fmt.Errorf("after the restore the volumes hold\n%s\nwant\n%s", got, want)
				}
				other := composessh.ProjectName(stateAttr(s, "sandboxer_restore.copy", "sandbox_id"))
				if got := facts(t, other); got != want {
					return fmt.Errorf("the new sandbox's volumes hold\n%s\nwant\n%s", got, want)
				}
				return nil
			},
		}},
	})
}
