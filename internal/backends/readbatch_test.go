package backends_test

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/composessh"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/vmattach"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// counting is a host transport that counts the commands run through it:
// instrumentation of the real SSH transport, which still runs them.
type counting struct {
	hosts.Transport
	n atomic.Int64
}

func (c *counting) Run(ctx context.Context, script string, stdin io.Reader, stdout io.Writer) error {
	c.n.Add(1)
	return c.Transport.Run(ctx, script, stdin, stdout)
}

// Refreshes of a host's sandboxes share one command, and each answers what
// Get answers: ready, degraded, a missing workspace, gone.
func TestRefreshReadsAHostOnce(t *testing.T) {
	testharness.RequireDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h := testharness.SSHHost(t)
	reg := backends.NewRegistry(composessh.New(os.Getenv("SANDBOXER_COMPOSE_CMD")), vmattach.New())
	repo := testharness.ComposeRepo(t, testharness.Image(t), "web", "worker")
	create := func(p string, inputs map[string]string) *backends.Sandbox {
		sb, err := reg.Create(ctx, backends.Request{ID: backends.NewID(), Profile: profile(t, p), Host: h, Inputs: inputs})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = reg.Destroy(context.Background(), h, sb.ID) })
		return sb
	}
	var ids []string
	for range 3 {
		ids = append(ids, create("profile.compose-e2e", map[string]string{"repo": repo}).ID)
	}
	ws, gone := create("profile.workspace", nil), create("profile.workspace", nil)
	ids = append(ids, ws.ID, gone.ID)

	// Out of band: one service of the second stack stopped, the last
	// workspace removed.
	stop := `docker stop -t 1 $(docker ps -q --filter label=com.docker.compose.project=sbx-` + ids[1] + ` --filter label=com.docker.compose.service=worker)`
	if out, err := exec.Command("sh", "-c", stop).CombinedOutput(); err != nil {
		t.Fatalf("docker stop: %v %s", err, out)
	}
	if err := os.RemoveAll(gone.WorkspaceDir); err != nil {
		t.Fatal(err)
	}

	want := map[string]backends.Status{}
	for _, id := range ids {
		_, st, err := reg.Get(ctx, h, id)
		if err != nil {
			t.Fatal(err)
		}
		want[id] = st
	}
	if want[ids[0]].State != backends.StatusReady || want[ids[1]].State != backends.StatusDegraded ||
		want[ws.ID].State != backends.StatusReady || want[gone.ID].State != backends.StatusMissing {
		t.Fatalf("the fixture is not what the test needs: %+v", want)
	}

	// A fresh registry, as a new provider process for a plan would have.
	c := &counting{Transport: h.Transport}
	ch := &hosts.Host{Transport: c, RootDir: h.RootDir}
	fresh := backends.NewRegistry(composessh.New(os.Getenv("SANDBOXER_COMPOSE_CMD")), vmattach.New())
	if _, err := fresh.Extension(composessh.Name); err != nil {
		t.Fatal(err)
	}
	// Nothing run before: the refreshes need no compose detection either
	// (which runs the compose CLI), only the engine's listing.
	var wg sync.WaitGroup
	got := make([]backends.Status, len(ids))
	errs := make([]error, len(ids)+1)
	for i, id := range ids {
		wg.Go(func() { _, got[i], errs[i] = fresh.Refresh(ctx, ch, id) })
	}
	wg.Go(func() { _, _, errs[len(ids)] = fresh.Refresh(ctx, ch, backends.NewID()) })
	wg.Wait()
	// The lookups of the plans that follow the refreshes (a snapshot's
	// plan locating its sandbox) are answered from the same view.
	for _, id := range ids {
		if sb, err := fresh.Sandbox(ctx, ch, id); err != nil || sb.ID != id || sb.WorkspaceDir == "" {
			t.Errorf("Sandbox %s = %+v, %v", id, sb, err)
		}
	}
	if _, err := fresh.Sandbox(ctx, ch, backends.NewID()); err != backends.ErrNotFound {
		t.Errorf("Sandbox of an unknown sandbox: %v, want ErrNotFound", err)
	}
	for i, id := range ids {
		if errs[i] != nil {
			t.Fatalf("Refresh %s: %v", id, errs[i])
		}
		if got[i].State != want[id].State || len(got[i].Services) != len(want[id].Services) {
			t.Errorf("Refresh %s = %+v; Get said %+v", id, got[i], want[id])
		}
		for j := range got[i].Services {
			if !reflect.DeepEqual(got[i].Services[j], want[id].Services[j]) {
				t.Errorf("Refresh %s service %d = %+v; Get said %+v", id, j, got[i].Services[j], want[id].Services[j])
			}
		}
	}
	if errs[len(ids)] != backends.ErrNotFound {
		t.Errorf("Refresh of an unknown sandbox: %v, want ErrNotFound", errs[len(ids)])
	}
	if n := c.n.Load(); n != 1 {
		t.Errorf("%d refreshes and %d record reads of one host ran %d commands, want 1 (and no compose detection)", len(ids)+1, len(ids), n)
	}

	// A change made through the registry is seen by the next refresh.
	if err := fresh.Destroy(ctx, ch, ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, _, err := fresh.Refresh(ctx, ch, ids[0]); err != backends.ErrNotFound {
		t.Errorf("Refresh after Destroy: %v, want ErrNotFound", err)
	}
}

// A host whose root directory does not exist holds no sandbox for the
// reads that look for one (Sandbox, the inventory), but a refresh of a
// sandbox in state says so instead of reporting it gone: a host block
// naming the wrong root directory must not plan replacements.
func TestHostWithoutRootDirectory(t *testing.T) {
	h := &hosts.Host{Transport: &hosts.Local{Name: "local"}, RootDir: t.TempDir() + "/never-made", Local: true}
	reg := backends.NewRegistry(vmattach.New())
	id := backends.NewID()
	if _, err := reg.Sandbox(t.Context(), h, id); !errors.Is(err, backends.ErrNotFound) {
		t.Errorf("Sandbox: %v, want ErrNotFound", err)
	}
	if list, err := reg.Sandboxes(t.Context(), h); err != nil || len(list) != 0 {
		t.Errorf("Sandboxes: %v, %v; want none", list, err)
	}
	if _, _, err := reg.Refresh(t.Context(), h, id); err == nil || errors.Is(err, backends.ErrNotFound) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("Refresh: %v, want an error saying the root directory does not exist", err)
	}
	if _, err := os.Stat(h.RootDir); !os.IsNotExist(err) {
		t.Errorf("the reads made the root directory: %v", err)
	}
}

// Lookups of one sandbox made together (an apply's last plan of a snapshot,
// then its create) share one read of its record; a change the registry
// makes on the host drops it.
func TestSandboxLookupsShareARead(t *testing.T) {
	ctx := t.Context()
	h := &hosts.Host{Transport: &hosts.Local{Name: "local"}, RootDir: t.TempDir(), Local: true}
	reg := backends.NewRegistry(vmattach.New())
	sb, err := reg.Create(ctx, backends.Request{ID: backends.NewID(), Profile: profile(t, "profile.workspace"), Host: h})
	if err != nil {
		t.Fatal(err)
	}
	c := &counting{Transport: h.Transport}
	ch := &hosts.Host{Transport: c, RootDir: h.RootDir, Local: true}
	for range 3 {
		got, err := reg.Sandbox(ctx, ch, sb.ID)
		if err != nil || got.ID != sb.ID || got.WorkspaceDir != sb.WorkspaceDir {
			t.Fatalf("Sandbox = %+v, %v", got, err)
		}
		got.WorkspaceDir = "changed by a caller" // each caller has its own copy
	}
	if n := c.n.Load(); n != 1 {
		t.Errorf("three lookups ran %d commands, want 1", n)
	}
	if err := reg.Destroy(ctx, ch, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Sandbox(ctx, ch, sb.ID); !errors.Is(err, backends.ErrNotFound) {
		t.Errorf("Sandbox after Destroy: %v, want ErrNotFound", err)
	}
}

// Snapshot refreshes of a host share one read of its store's manifests;
// each is verified on its own, so one tampered manifest fails only its
// own snapshot's refresh.
func TestRefreshSnapshotReadsAStoreOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h := testharness.SSHHost(t)
	reg := backends.NewRegistry(vmattach.New())
	sb, err := reg.Create(ctx, backends.Request{ID: backends.NewID(), Profile: profile(t, "profile.workspace"), Host: h})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Destroy(context.Background(), h, sb.ID) })
	var ids []string
	for i := range 3 {
		if err := os.WriteFile(sb.WorkspaceDir+"/f", []byte{byte(i)}, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := reg.Snapshot(ctx, h, backends.SnapshotRequest{ID: "snap-" + backends.NewID(), SandboxID: sb.ID})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	// The third manifest is replaced on the host by one no capture wrote.
	manifest := h.RootDir + "/.sandboxer/store/snapshots/" + ids[2] + ".json"
	if err := os.WriteFile(manifest, []byte(`{"version": 999, "id": "`+ids[2]+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}

	c := &counting{Transport: h.Transport}
	ch := &hosts.Host{Transport: c, RootDir: h.RootDir}
	fresh := backends.NewRegistry(vmattach.New())
	var wg sync.WaitGroup
	errs := make([]error, 4)
	got := make([]string, 4)
	for i, id := range append(ids, "snap-"+backends.NewID()) {
		wg.Go(func() {
			s, err := fresh.RefreshSnapshot(ctx, ch, id)
			got[i], errs[i] = s.ID, err
		})
	}
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil || got[i] != ids[i] {
			t.Errorf("RefreshSnapshot %s = %q, %v", ids[i], got[i], errs[i])
		}
	}
	if errs[2] == nil || errors.Is(errs[2], backends.ErrSnapshotNotFound) {
		t.Errorf("a tampered manifest refreshed as %v", errs[2])
	}
	if !errors.Is(errs[3], backends.ErrSnapshotNotFound) {
		t.Errorf("an unknown snapshot: %v, want ErrSnapshotNotFound", errs[3])
	}
	if n := c.n.Load(); n != 1 {
		t.Errorf("4 snapshot refreshes of one host ran %d commands, want 1", n)
	}
	if _, err := os.Stat(h.RootDir + "/.sandboxer/store"); err != nil {
		t.Fatal(err)
	}
}
