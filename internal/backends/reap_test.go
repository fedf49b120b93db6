package backends_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/vmattach"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// Registry.Reap (the sandboxer_reap action) runs the reaper on a host where
// it is not installed: the expired sandbox goes, the one without expiry
// stays, and nothing is written to the host (no reaper script). A root
// directory that does not exist has nothing to reap.
func TestReapWithoutInstalling(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h := testharness.SSHHost(t)
	reg := backends.NewRegistry(vmattach.New())
	p := profile(t, "profile.workspace")
	expiring, err := reg.Create(ctx, backends.Request{ID: backends.NewID(), Profile: p, Host: h, TTL: time.Second, TTLText: "1s"})
	if err != nil {
		t.Fatal(err)
	}
	keeper, err := reg.Create(ctx, backends.Request{ID: backends.NewID(), Profile: p, Host: h})
	if err != nil {
		t.Fatal(err)
	}
	waitPastExpiry(expiring)

	reaped, err := reg.Reap(ctx, h)
	if err != nil || !slices.Equal(reaped, []string{expiring.ID}) {
		t.Fatalf("reaped %v (%v), want only %s", reaped, err, expiring.ID)
	}
	if _, err := os.Stat(expiring.WorkspaceDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the reaped workspace remains: %v", err)
	}
	if _, _, err := reg.Get(ctx, h, expiring.ID); !errors.Is(err, backends.ErrNotFound) {
		t.Errorf("the reaped record remains: %v", err)
	}
	if _, st, err := reg.Get(ctx, h, keeper.ID); err != nil || st.State != backends.StatusReady {
		t.Errorf("the sandbox without expiry: %+v %v", st, err)
	}
	if _, err := os.Stat(backends.ReaperPath(h)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("reaping installed the reaper: %v", err)
	}
	if again, err := reg.Reap(ctx, h); err != nil || len(again) != 0 {
		t.Errorf("a second run reaped %v (%v)", again, err)
	}

	nowhere := &hosts.Host{Transport: h.Transport, RootDir: filepath.Join(t.TempDir(), "never-made")}
	if ids, err := reg.Reap(ctx, nowhere); err != nil || len(ids) != 0 {
		t.Errorf("reaping a root that does not exist: %v %v", ids, err)
	}
	if _, err := os.Stat(nowhere.RootDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("reaping made the root directory: %v", err)
	}
}

// waitPastExpiry returns once the clock (the harness hosts' too: this
// machine's) is past sb's expiry as the reaper sees it: it compares whole
// seconds, so past the expiry's second.
func waitPastExpiry(sb *backends.Sandbox) {
	time.Sleep(time.Until(sb.ExpiresAt.Truncate(time.Second).Add(2 * time.Second)))
}
