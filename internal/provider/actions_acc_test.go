package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/vmattach"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// natives are the CLI versions with actions and list resources.
var natives = []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_14_0)}

// expiredSandbox makes, outside Terraform, a workspace sandbox on the
// harness host's root whose expiry has passed (as another pipeline would
// have left it), and returns its id and workspace.
func expiredSandbox(t *testing.T, root string) (string, string) {
	t.Helper()
	tr, err := hosts.NewSSH(testharness.SSHConfig(t, "harness", false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() }) // best effort: the test is over
	h := &hosts.Host{Transport: tr, RootDir: root}
	c, err := catalog.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Get("profile.workspace")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb, err := backends.NewRegistry(vmattach.New()).Create(ctx, backends.Request{ID: backends.NewID(), Profile: p, Host: h, TTL: time.Second, TTLText: "1s"})
	if err != nil {
		t.Fatal(err)
	}
	// The reaper compares whole seconds: past the expiry's second.
	if err := waitFor(time.Minute, "the sandbox's expiry", func() bool {
		return time.Now().UTC().Truncate(time.Second).After(sb.ExpiresAt.Add(time.Second))
	}); err != nil {
		t.Fatal(err)
	}
	return sb.ID, sb.WorkspaceDir
}

// The sandboxer_snapshot and sandboxer_reap actions, triggered after
// another resource is created: a snapshot of the managed sandbox is in the
// host's store (not in state), the expired sandbox on the host is gone
// (record and workspace), the sandbox Terraform manages stays.
func TestAccActions_trigger(t *testing.T) {
	testAccPreCheck(t)
	h := newAccHost(t)
	var id, ws, keptWS string
	config := h.providerConfig(t) + `
resource "sandboxer_sandbox" "kept" {
  profile = "profile.workspace"
  host    = "harness"
}

action "sandboxer_snapshot" "now" {
  config {
    sandbox_id = sandboxer_sandbox.kept.id
    name       = "adhoc"
  }
}

action "sandboxer_reap" "now" {
  config {
    host = "harness"
  }
}

resource "terraform_data" "cleanup" {
  input = sandboxer_sandbox.kept.id
  lifecycle {
    action_trigger {
      events  = [after_create]
      actions = [action.sandboxer_snapshot.now, action.sandboxer_reap.now]
    }
  }
}
`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		TerraformVersionChecks:   natives,
		Steps: []resource.TestStep{{
			PreConfig: func() { id, ws = expiredSandbox(t, h.rootDir) },
			Config:    config,
			Check: func(s *terraform.State) error {
				if _, err := os.Stat(filepath.Join(h.rootDir, ".sandboxer", "sandboxes", id+".json")); !errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("the expired sandbox's record remains: %v", err)
				}
				if _, err := os.Stat(ws); !errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("the expired sandbox's workspace remains: %v", err)
				}
				kept := stateAttr(s, "sandboxer_sandbox.kept", "workspace_dir")
				if _, err := os.Stat(kept); err != nil {
					return fmt.Errorf("the managed sandbox's workspace: %v", err)
				}
				manifests, _ := filepath.Glob(filepath.Join(h.rootDir, ".sandboxer", "store", "snapshots", "*.json"))
				var found []string
				for _, f := range manifests {
					raw, err := os.ReadFile(f)
					if err != nil {
						return err
					}
					m, err := checkpoint.ParseManifest(strings.TrimSuffix(filepath.Base(f), ".json"), raw)
					if err != nil {
						return err
					}
					if m.Name == "adhoc" && m.SandboxID == stateAttr(s, "sandboxer_sandbox.kept", "id") {
						found = append(found, f)
					}
				}
				if len(found) != 1 || len(s.RootModule().Resources) != 2 {
					return fmt.Errorf("snapshots named adhoc of the sandbox: %v (resources in state: %d, want 2)", found, len(s.RootModule().Resources))
				}
				keptWS = kept
				return nil
			},
		}, {
			// Broken after the snapshot; the restore action, triggered
			// by a new resource, puts the snapshot's files back in place.
			PreConfig: func() {
				must(t, os.WriteFile(filepath.Join(keptWS, "state.txt"), []byte("broken\n"), 0o644))
			},
			Config: config + `
data "sandboxer_snapshots" "adhoc" {
  host       = "harness"
  sandbox_id = sandboxer_sandbox.kept.id
  name       = "adhoc"
}

action "sandboxer_restore" "rollback" {
  config {
    snapshot_id       = data.sandboxer_snapshots.adhoc.snapshots[0].id
    target_sandbox_id = sandboxer_sandbox.kept.id
    prune             = true
  }
}

resource "terraform_data" "rollback" {
  input = data.sandboxer_snapshots.adhoc.snapshots[0].id
  lifecycle {
    action_trigger {
      events  = [after_create]
      actions = [action.sandboxer_restore.rollback]
    }
  }
}
`,
			Check: func(*terraform.State) error {
				if _, err := os.Stat(filepath.Join(keptWS, "state.txt")); !errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("state.txt, made after the snapshot, is still there after a pruning restore: %v", err)
				}
				return nil
			},
		}},
	})
}

// `terraform apply -invoke` of sandboxer_reap through the real CLI: the
// action's progress names the sandbox it removed, the host no longer has
// it, and nothing enters state.
func TestAccActions_invoke(t *testing.T) {
	testAccPreCheck(t)
	skipBelowNatives(t)
	tf := newDevCLI(t)
	h := newAccHost(t)
	id, ws := expiredSandbox(t, h.rootDir)
	work := tf.dir(devCLIHeader + fmt.Sprintf(`
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

action "sandboxer_reap" "now" {
  config {
    host = "harness"
  }
}
`, testharness.Env(t, "SANDBOXER_TEST_SSH_ADDR"), testharness.Env(t, "SANDBOXER_TEST_SSH_USER"),
		testharness.Env(t, "SANDBOXER_TEST_SSH_KEY"), testharness.Env(t, "SANDBOXER_TEST_KNOWN_HOSTS"), h.rootDir))
	applied := tf.run(work, "apply", "-auto-approve", "-invoke=action.sandboxer_reap.now")
	if !strings.Contains(applied, "reaped sandbox "+id) {
		t.Errorf("the invoke's output does not report sandbox %s:\n%s", id, applied)
	}
	if _, err := os.Stat(filepath.Join(h.rootDir, ".sandboxer", "sandboxes", id+".json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the expired sandbox's record remains: %v", err)
	}
	if _, err := os.Stat(ws); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the expired sandbox's workspace remains: %v", err)
	}
	if state, _ := tf.try(work, "state", "list"); strings.TrimSpace(state) != "" {
		t.Errorf("an invoked action left state: %q", state)
	}
}

// versionAtLeast reports whether v ("1.14.9") is at least major.minor.
func versionAtLeast(v string, major, minor int) bool {
	var ma, mi int
	if _, err := fmt.Sscanf(v, "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}
