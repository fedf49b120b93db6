package provider

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// A repo that is a symlink to a directory is copied as the tree it points
// to, and key and known_hosts paths starting with ~/ are found in the home
// directory of the user running Terraform, as ssh finds them.
func TestAccSandbox_symlinkedRepoAndHomePaths(t *testing.T) {
	testAccPreCheck(t)
	testharness.RequireDocker(t)
	h := newAccHost(t)
	repo := testharness.ComposeRepo(t, testharness.Image(t), "web")
	link := filepath.Join(t.TempDir(), "app")
	if err := os.Symlink(repo, link); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	copyInto(t, testharness.Env(t, "SANDBOXER_TEST_SSH_KEY"), filepath.Join(home, ".ssh", "id_ed25519"))
	copyInto(t, testharness.Env(t, "SANDBOXER_TEST_KNOWN_HOSTS"), filepath.Join(home, ".ssh", "known_hosts"))
	t.Setenv("HOME", home)

	config := fmt.Sprintf(`
provider "sandboxer" {
  host {
    name             = "build1"
    address          = %q
    user             = %q
    private_key_file = "~/.ssh/id_ed25519"
    known_hosts_file = "~/.ssh/known_hosts"
    root_dir         = %q
  }
}

resource "sandboxer_sandbox" "linked" {
  profile = "profile.compose-e2e"
  host    = "build1"
  inputs  = { repo = %q }
}
`, testharness.Env(t, "SANDBOXER_TEST_SSH_ADDR"), testharness.Env(t, "SANDBOXER_TEST_SSH_USER"), h.rootDir, link)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             h.checkNothingLeft(t),
		Steps: []resource.TestStep{{
			Config: config,
			Check: func(s *terraform.State) error {
				ws := stateAttr(s, "sandboxer_sandbox.linked", "workspace_dir")
				st, err := os.Lstat(filepath.Join(ws, "docker-compose.yml"))
				if err != nil || !st.Mode().IsRegular() {
					return fmt.Errorf("workspace compose file is not a regular file: %v, %v", st, err)
				}
				if s := stateAttr(s, "sandboxer_sandbox.linked", "status"); s != "ready" {
					return fmt.Errorf("status %s", s)
				}
				return fileIs(ws, "README.txt", "fixture\n")
			},
		}},
	})
}

// nonRoot is the harness sshd as the non-root user of the harness (in
// the docker group), host block "ci", its root_dir under the user's home.
type nonRoot struct {
	acc      accHost // rootDir: the user's root_dir
	provider string  // the provider block
	uid, gid int
}

func newNonRoot(t *testing.T, u *user.User) nonRoot {
	t.Helper()
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	// Made here, the user's, so that it is watched from the start
	// (accHostAt); the provider's `mkdir -p` of it finds it there. Named
	// apart from another test process's sharing the harness.
	root, err := os.MkdirTemp(u.HomeDir, "sandboxes-") //nolint:usetesting // under the user's home, not the temporary directory
	must(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	must(t, os.Chown(root, uid, gid))
	return nonRoot{
		acc: accHostAt(t, root, t.TempDir(), t.TempDir()),
		provider: fmt.Sprintf(`
provider "sandboxer" {
  host {
    name             = "ci"
    address          = %q
    user             = %q
    private_key_file = %q
    known_hosts_file = %q
    root_dir         = %q
  }
}
`, testharness.Env(t, "SANDBOXER_TEST_SSH_ADDR"), u.Username, testharness.Env(t, "SANDBOXER_TEST_SSH_KEY"),
			testharness.Env(t, "SANDBOXER_TEST_KNOWN_HOSTS"), root),
		uid: uid, gid: gid,
	}
}

// ownedBy says whether p belongs to the user.
func (nr nonRoot) ownedBy(p string) error {
	st, err := os.Lstat(p)
	if err != nil {
		return err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("no owner information for %s on this OS", p)
	}
	if int(sys.Uid) != nr.uid || int(sys.Gid) != nr.gid {
		return fmt.Errorf("%s belongs to %d:%d, not the SSH user's %d:%d", p, sys.Uid, sys.Gid, nr.uid, nr.gid)
	}
	return nil
}

// A non-root SSH user in the docker group, with its root_dir under its
// home, gets compose sandboxes, snapshots and in-place restores as root does.
func TestAccSandbox_nonRootUser(t *testing.T) {
	testAccPreCheck(t)
	testharness.RequireDocker(t)
	name := testharness.Env(t, "SANDBOXER_TEST_SSH_NONROOT_USER")
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatalf("harness user %s: %v", name, err)
	}
	nr := newNonRoot(t, u)
	uid, gid, h, provider := nr.uid, nr.gid, nr.acc, nr.provider
	repo := testharness.ComposeRepo(t, testharness.Image(t), "web", "worker")

	sandbox := fmt.Sprintf(`
resource "sandboxer_sandbox" "app" {
  profile = "profile.compose-e2e"
  host    = "ci"
  inputs  = { repo = %q }
}

resource "sandboxer_snapshot" "good" {
  sandbox_id = sandboxer_sandbox.app.id
  name       = "known-good"
  quiesce    = "pause"
}
`, repo)
	restore := `
resource "sandboxer_restore" "back" {
  snapshot_id       = sandboxer_snapshot.good.id
  target_sandbox_id = sandboxer_sandbox.app.id
  prune             = true
}
`
	var ws string
	// Files a user of the sandbox writes are the SSH user's, as they would be.
	writeAsUser := func(rel, content string) {
		p := filepath.Join(ws, rel)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             h.checkNothingLeft(t),
		Steps: []resource.TestStep{
			{
				Config: provider + `
resource "sandboxer_sandbox" "app" {
  profile = "profile.compose-e2e"
  host    = "ci"
  inputs  = { repo = ` + fmt.Sprintf("%q", repo) + ` }
}
`,
				Check: func(s *terraform.State) error {
					ws = stateAttr(s, "sandboxer_sandbox.app", "workspace_dir")
					st, err := os.Stat(ws)
					if err != nil {
						return err
					}
					sys, ok := st.Sys().(*syscall.Stat_t)
					if !ok {
						return fmt.Errorf("no owner information for %s on this OS", ws)
					}
					if owner := sys.Uid; int(owner) != uid {
						return fmt.Errorf("workspace %s is owned by uid %d, not %s's %d", ws, owner, name, uid)
					}
					return nil
				},
			},
			{
				PreConfig: func() { writeAsUser("state.txt", "known good\n") },
				Config:    provider + sandbox,
			},
			{
				PreConfig: func() {
					writeAsUser("state.txt", "broken\n")
					writeAsUser("junk.txt", "junk\n")
				},
				Config: provider + sandbox + restore,
				Check: func(*terraform.State) error {
					if err := fileIs(ws, "state.txt", "known good\n"); err != nil {
						return err
					}
					return fileAbsent(ws, "junk.txt")
				},
			},
		},
	})
}

// copyInto copies a file, creating its directory (mode 0700, as ~/.ssh).
func copyInto(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
