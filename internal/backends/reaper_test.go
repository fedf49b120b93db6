package backends_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/composessh"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/vmattach"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// reaper = true installs the reaper and its crontab line when a sandbox is
// created; reaper = false removes exactly those, leaving every other line
// (another root directory's reaper, whose path starts with this one's, too).
func TestReaperOnAndOffInCrontab(t *testing.T) {
	testharness.Alone(t) // it replaces the harness user's whole crontab meanwhile
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h := testharness.SSHHost(t)
	run := func(script string) string {
		t.Helper()
		out, err := hosts.Output(ctx, h, script)
		if err != nil {
			t.Fatalf("%s: %v", script, err)
		}
		return string(out)
	}
	if strings.TrimSpace(run("command -v crontab || true")) == "" {
		if os.Getenv("SANDBOXER_REQUIRE_HARNESS") == "1" {
			t.Fatal("crontab is missing: scripts/harness/install.sh installs cron")
		}
		t.Skip("crontab is missing: run scripts/harness/install.sh")
	}
	// The harness user's crontab is shared: put it back afterwards.
	saved := run("crontab -l 2>/dev/null || true")
	t.Cleanup(func() { restoreCrontab(t, h, saved) })
	run("printf '0 3 * * * echo unrelated\\n' | crontab -")

	root, err := filepath.EvalSymlinks(h.RootDir)
	if err != nil {
		t.Fatal(err)
	}
	sibling := &hosts.Host{Transport: h.Transport, RootDir: root + "-sibling"} // same prefix
	t.Cleanup(func() { _ = os.RemoveAll(sibling.RootDir) })
	if err := backends.InstallReaper(ctx, sibling); err != nil {
		t.Fatal(err)
	}

	facts := func(host *hosts.Host) backends.HostFacts {
		t.Helper()
		f, err := backends.NewRegistry().Facts(ctx, host)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	create := func(setting backends.ReaperSetting) {
		t.Helper()
		reg := backends.NewRegistry(composessh.New(os.Getenv("SANDBOXER_COMPOSE_CMD")), vmattach.New())
		reg.SetReaper(h.Host(), setting)
		sb, err := reg.Create(ctx, backends.Request{ID: backends.NewID(), Profile: profile(t, "profile.workspace"), Host: h})
		if err != nil {
			t.Fatal(err)
		}
		if err := reg.Destroy(ctx, h, sb.ID); err != nil {
			t.Fatal(err)
		}
	}
	lineOf := func(r string) string { return "# sandboxer-reaper " + r }

	create(backends.ReaperOn)
	create(backends.ReaperOn) // idempotent: still one line
	tab := run("crontab -l")
	if strings.Count(tab, lineOf(root)+"\n") != 1 || !strings.Contains(tab, lineOf(root+"-sibling")) || !strings.Contains(tab, "echo unrelated") {
		t.Fatalf("after reaper = true, crontab:\n%s", tab)
	}
	if f := facts(h); !f.ReaperInstalled || !f.ReaperScheduled {
		t.Fatalf("after reaper = true, the host's facts say installed %v, scheduled %v", f.ReaperInstalled, f.ReaperScheduled)
	}

	create(backends.ReaperUnset) // unset leaves it alone
	if f := facts(h); !f.ReaperInstalled || !f.ReaperScheduled {
		t.Fatal("an unset reaper argument removed the reaper")
	}

	create(backends.ReaperOff)
	tab = run("crontab -l")
	if strings.Contains(tab, lineOf(root)+"\n") || !strings.Contains(tab, lineOf(root+"-sibling")+"\n") || !strings.Contains(tab, "echo unrelated") {
		t.Fatalf("after reaper = false, want only this root's line gone; crontab:\n%s", tab)
	}
	if f := facts(h); f.ReaperInstalled || f.ReaperScheduled {
		t.Fatalf("after reaper = false, the host's facts say installed %v, scheduled %v", f.ReaperInstalled, f.ReaperScheduled)
	}
	if f := facts(sibling); !f.ReaperInstalled || !f.ReaperScheduled {
		t.Fatal("reaper = false removed another root directory's reaper")
	}

	// A root directory deleted by hand still has its line removed.
	if err := os.RemoveAll(sibling.RootDir); err != nil {
		t.Fatal(err)
	}
	if err := backends.UninstallReaper(ctx, sibling); err != nil {
		t.Fatal(err)
	}
	if tab = run("crontab -l"); strings.Contains(tab, "sandboxer-reaper") || !strings.Contains(tab, "echo unrelated") {
		t.Fatalf("after removing the reaper of a deleted root directory, crontab:\n%s", tab)
	}
}

// Reapers installed and removed at once, for root directories of one user
// (two applies), keep every other root's line: the edits of the crontab
// take turns.
func TestReapersAtOnceKeepEveryLine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h := testharness.SSHHost(t)
	saveCrontab(t, h)
	roots := make([]*hosts.Host, 8)
	for i := range roots {
		roots[i] = &hosts.Host{Transport: h.Transport, RootDir: t.TempDir()}
	}
	atOnce := func(do func(context.Context, *hosts.Host) error) string {
		t.Helper()
		var wg sync.WaitGroup
		for _, r := range roots {
			wg.Go(func() {
				if err := do(ctx, r); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		tab, err := hosts.Output(ctx, h, "crontab -l 2>/dev/null || true")
		if err != nil {
			t.Fatal(err)
		}
		return string(tab)
	}
	tab := atOnce(backends.InstallReaper)
	for _, r := range roots {
		if !strings.Contains(tab, "# sandboxer-reaper "+r.RootDir+"\n") {
			t.Fatalf("the line of %s is missing after %d installs at once; crontab:\n%s", r.RootDir, len(roots), tab)
		}
	}
	// Half of them removed at once with the other half installed again.
	half := roots[:len(roots)/2]
	tab = atOnce(func(ctx context.Context, r *hosts.Host) error {
		if slices.Contains(half, r) {
			return backends.UninstallReaper(ctx, r)
		}
		return backends.InstallReaper(ctx, r)
	})
	for _, r := range roots {
		if got, want := strings.Contains(tab, "# sandboxer-reaper "+r.RootDir+"\n"), !slices.Contains(half, r); got != want {
			t.Fatalf("the line of %s is there: %v, want %v; crontab:\n%s", r.RootDir, got, want, tab)
		}
	}
}

// saveCrontab puts the harness user's crontab (shared by every test) back
// when the test ends.
func saveCrontab(t *testing.T, h *hosts.Host) {
	t.Helper()
	// Putting it back would drop the lines another test process
	// (the acceptance tests) wrote meanwhile.
	testharness.Alone(t)
	out, err := hosts.Output(context.Background(), h, "crontab -l 2>/dev/null || true")
	if err != nil {
		t.Fatal(err)
	}
	saved := string(out)
	t.Cleanup(func() { restoreCrontab(t, h, saved) })
}

// restoreCrontab puts saved back as the harness user's crontab (shared by
// every test); a failure is the test's, as it leaves the next test another.
func restoreCrontab(t *testing.T, h *hosts.Host, saved string) {
	t.Helper()
	var err error
	if strings.TrimSpace(saved) == "" {
		_, err = hosts.Output(context.Background(), h, "crontab -r 2>/dev/null || true")
	} else {
		err = h.Run(context.Background(), "crontab -", strings.NewReader(saved), nil)
	}
	if err != nil {
		t.Errorf("unable to restore the crontab: %v", err)
	}
}

// A root directory is data, never code: one holding $( ), } and a quote
// serves workspace sandboxes, and its reaper installs, runs from its
// crontab line and reaps, all without running anything the name holds.
func TestHostileRootDirectory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h := testharness.SSHHost(t)
	saveCrontab(t, h)
	marker := filepath.Join(os.TempDir(), "sandboxer-injected-"+backends.NewID())
	t.Cleanup(func() { _ = os.Remove(marker) }) // usually never made
	h.RootDir = filepath.Join(h.RootDir, "r$(touch "+marker+")}x'y`touch "+marker+"`")
	t.Cleanup(func() { _ = backends.UninstallReaper(context.Background(), h) })
	reg := backends.NewRegistry(vmattach.New())
	reg.SetReaper(h.Host(), backends.ReaperOn)

	expiring, err := reg.Create(ctx, backends.Request{ID: backends.NewID(), Profile: profile(t, "profile.workspace"), Host: h, TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := reg.Create(ctx, backends.Request{ID: backends.NewID(), Profile: profile(t, "profile.workspace"), Host: h})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sb.WorkspaceDir, h.RootDir+"/") {
		t.Fatalf("workspace %s is not in the root directory %s", sb.WorkspaceDir, h.RootDir)
	}
	if _, _, err := reg.Get(ctx, h, sb.ID); err != nil {
		t.Fatal(err)
	}
	if err := reg.Destroy(ctx, h, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sb.WorkspaceDir); !os.IsNotExist(err) {
		t.Fatal("the destroyed workspace remains")
	}

	script := filepath.Join(h.RootDir, ".sandboxer", "bin", "reaper.sh")
	if _, err := os.Stat(script); err != nil {
		t.Fatalf("the reaper is not installed: %v", err)
	}
	waitPastExpiry(expiring)
	// Run as cron would: the command of the root's crontab line.
	tab, err := hosts.Output(ctx, h, "crontab -l")
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(string(tab), "\n") {
		if strings.HasSuffix(l, "# sandboxer-reaper "+h.RootDir) {
			line = l
		}
	}
	f := strings.Fields(line)
	if len(f) < 6 {
		t.Fatalf("no crontab line for the root directory in:\n%s", tab)
	}
	cmd := strings.Join(f[5:], " ")
	if err := h.Run(ctx, cmd, nil, nil); err != nil {
		t.Fatalf("the crontab command %s: %v", cmd, err)
	}
	log, _ := os.ReadFile(filepath.Join(h.RootDir, ".sandboxer", "reaper.log"))
	if !strings.Contains(string(log), "reaped "+expiring.ID) {
		t.Fatalf("the reaper run by the crontab command did not reap %s; its log:\n%s", expiring.ID, log)
	}
	if _, err := os.Stat(expiring.WorkspaceDir); !os.IsNotExist(err) {
		t.Fatal("the reaped workspace remains")
	}
	// And by hand, as sh <root>/.sandboxer/bin/reaper.sh.
	if again, err := backends.RunReaper(ctx, h); err != nil || len(again) != 0 {
		t.Fatalf("running the reaper by hand: %v %v", again, err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a command in the root directory's name was run")
	}
}

// The reaper acts on the same records as the provider: an expired record
// whose id is not its file's, or whose workspace lies outside the root
// (directly, or through a symlink inside it), is skipped whole.
func TestReaperSkipsTamperedRecords(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h := testharness.SSHHost(t)
	saveCrontab(t, h)
	t.Cleanup(func() { _ = backends.UninstallReaper(context.Background(), h) })
	if err := backends.InstallReaper(ctx, h); err != nil {
		t.Fatal(err)
	}
	root, err := filepath.EvalSymlinks(h.RootDir)
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	expired := time.Now().Add(-time.Hour).UTC()
	plant := func(file string, sb backends.Sandbox) {
		sb.ExpiresAt = &expired
		backends.PlantRecord(t, root, file, sb, nil)
	}
	var dirs []string
	dir := func(base, name string) string {
		d := filepath.Join(base, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
		return d
	}
	a, b, c, d, e := backends.NewID(), backends.NewID(), backends.NewID(), backends.NewID(), backends.NewID()
	plant(a, backends.Sandbox{ID: a, Extension: "ext.compose-ssh", WorkspaceDir: dir(outside, a)})
	plant(b, backends.Sandbox{ID: c, Extension: "ext.compose-ssh", WorkspaceDir: dir(root, c)})
	dir(outside, d)
	plant(d, backends.Sandbox{ID: d, Extension: "ext.compose-ssh", WorkspaceDir: root + "/link/" + d})
	plant(e, backends.Sandbox{ID: e, Extension: "ext.vm-packer", WorkspaceDir: root + "/../" + filepath.Base(root) + "/sbx-" + e})
	dir(root, "sbx-"+e)
	reaped, err := backends.RunReaper(ctx, h)
	if err != nil || len(reaped) != 0 {
		t.Fatalf("reaped %v (%v), want nothing", reaped, err)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed", d)
		}
	}
	for _, id := range []string{a, b, d, e} {
		if _, err := os.Stat(filepath.Join(root, ".sandboxer", "sandboxes", id+".json")); err != nil {
			t.Errorf("the record %s.json was removed", id)
		}
	}
}
