package provider

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"golang.org/x/sys/unix"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// madeUnder watches root directories (inotify) for the sandboxes made
// under them. A compose sandbox's workspace, <root>/<id>, exists before
// anything of it reaches the engine, so a network or volume of project
// sbx-<id> is this test's exactly when <id> appeared under one of its
// roots; one of another test process sharing the harness never does.
type madeUnder struct {
	fd  int
	ids map[string]bool
}

func watchRoots(t *testing.T, roots ...string) *madeUnder {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatalf("inotify: %v", err)
	}
	t.Cleanup(func() { _ = unix.Close(fd) })
	for _, root := range roots {
		if root == "" {
			continue
		}
		if _, err := unix.InotifyAddWatch(fd, root, unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_ONLYDIR); err != nil {
			t.Fatalf("watching %s: %v", root, err)
		}
	}
	return &madeUnder{fd: fd, ids: map[string]bool{}}
}

// seen reads the events so far: every id (sbx-<id> for a vm-packer
// workspace) that appeared under the roots.
func (m *madeUnder) seen(t *testing.T) map[string]bool {
	t.Helper()
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(m.fd, buf)
		if errors.Is(err, unix.EAGAIN) {
			return m.ids
		}
		if err != nil {
			t.Fatalf("reading inotify events: %v", err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			mask := binary.NativeEndian.Uint32(buf[off+4:])
			size := int(binary.NativeEndian.Uint32(buf[off+12:]))
			if mask&unix.IN_Q_OVERFLOW != 0 {
				t.Fatal("inotify queue overflowed: what was made under the roots is unknown")
			}
			name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+size]), "\x00")
			m.ids[strings.TrimPrefix(name, "sbx-")] = true
			off += unix.SizeofInotifyEvent + size
		}
	}
}

// composeObjects lists the docker networks or volumes of compose projects
// named like a sandbox's (sbx-<id>), with the id of each: one listing,
// however many there are. Docker not answering is an empty list.
func composeObjects(t *testing.T, kind string) map[string]string {
	t.Helper()
	name := map[string]string{"network": "{{.ID}}", "volume": "{{.Name}}"}[kind]
	out, err := exec.Command("docker", kind, "ls", "--filter", "label=com.docker.compose.project",
		"--format", name+` {{.Label "com.docker.compose.project"}}`).Output()
	if err != nil {
		return nil
	}
	ids := map[string]string{}
	for line := range strings.Lines(string(out)) {
		obj, project, _ := strings.Cut(strings.TrimSpace(line), " ")
		if id, ok := strings.CutPrefix(project, "sbx-"); ok {
			ids[obj] = id
		}
	}
	return ids
}

// leftovers asks the host itself — the docker engine and the filesystem,
// not Terraform state — what remains under the root directories:
// workspaces, records, and containers, networks or volumes of the
// sandboxes made under them.
func (h accHost) leftovers(t *testing.T) []string {
	t.Helper()
	var left []string
	var roots []string
	for _, root := range []string{h.rootDir, h.rootDir2, h.localDir} {
		// An accHost may leave a root unset (a test with one extra root
		// directory): "" would be a prefix of every path on the host.
		if root != "" {
			roots = append(roots, root)
		}
	}
	for _, root := range roots {
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			if e.Name() != ".sandboxer" {
				left = append(left, "workspace "+e.Name())
			}
		}
		for _, pattern := range []string{"sandboxes/*", "store/snapshots/*", "store/objects/*/*"} {
			found, _ := filepath.Glob(filepath.Join(root, ".sandboxer", pattern))
			for _, f := range found {
				left = append(left, strings.SplitN(pattern, "/", 2)[0]+" "+filepath.Base(f))
			}
		}
	}
	out, err := exec.Command("docker", "ps", "-a", "--format", `{{.Names}} {{.Label "com.docker.compose.project.working_dir"}}`).Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		name, dir, _ := strings.Cut(line, " ")
		if dir != "" && slices.ContainsFunc(roots, func(root string) bool { return strings.HasPrefix(dir, root+"/") }) {
			left = append(left, "container "+name)
		}
	}
	// A network or volume of a sandbox made under the roots, with or
	// without a container left.
	made := h.made.seen(t)
	for _, kind := range []string{"network", "volume"} {
		for obj, id := range composeObjects(t, kind) {
			if made[id] {
				left = append(left, kind+" "+obj)
			}
		}
	}
	return left
}

// checkNothingLeft is a CheckDestroy that asks the host.
func (h accHost) checkNothingLeft(t *testing.T) func(*terraform.State) error {
	return func(*terraform.State) error {
		if left := h.leftovers(t); len(left) > 0 {
			return fmt.Errorf("destroy left on the host: %s", strings.Join(left, ", "))
		}
		return nil
	}
}

// leftovers finds a sandbox network left without any container (the check
// every destroy test relies on cannot miss one), and only a network of a
// sandbox made under the test's roots: not another test process's.
func TestLeftoversFindsAStrayNetwork(t *testing.T) {
	testharness.RequireDocker(t)
	h := accHostAt(t, t.TempDir(), "", "")
	network := func(id string) {
		name := "sbx-" + id
		if out, err := exec.Command("docker", "network", "create", "--label", "com.docker.compose.project="+name, name).CombinedOutput(); err != nil {
			t.Fatalf("docker network create: %v %s", err, out)
		}
		t.Cleanup(func() { _ = exec.Command("docker", "network", "rm", name).Run() })
	}
	ours, theirs := backends.NewID(), backends.NewID()
	// A sandbox made here and removed, its network left behind.
	must(t, os.Mkdir(filepath.Join(h.rootDir, ours), 0o700))
	network(ours)
	must(t, os.Remove(filepath.Join(h.rootDir, ours)))
	// Another process's sandbox, under a root of its own.
	must(t, os.Mkdir(filepath.Join(t.TempDir(), theirs), 0o700))
	network(theirs)

	left := strings.Join(h.leftovers(t), ",")
	if !strings.Contains(left, "network ") || strings.Count(left, "network ") != 1 {
		t.Fatalf("leftovers %q: want exactly the stray network of the sandbox made under the root", left)
	}
	for _, line := range h.leftovers(t) {
		obj := strings.TrimPrefix(line, "network ")
		name, err := exec.Command("docker", "network", "inspect", "-f", "{{.Name}}", obj).Output()
		if err != nil || strings.TrimSpace(string(name)) != "sbx-"+ours {
			t.Fatalf("leftover %q is not sbx-%s (%s, %v)", line, ours, name, err)
		}
	}
}
