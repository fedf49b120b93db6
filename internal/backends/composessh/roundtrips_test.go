package composessh_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/composessh"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// counted is an SSH transport that counts every exchange with the host it
// makes: commands, and file writes of each kind.
type counted struct {
	*hosts.SSH
	n atomic.Int64
}

func (c *counted) Run(ctx context.Context, script string, stdin io.Reader, stdout io.Writer) error {
	c.n.Add(1)
	return c.SSH.Run(ctx, script, stdin, stdout)
}

func (c *counted) RunPrivately(ctx context.Context, script string, stdout io.Writer) error {
	c.n.Add(1)
	return c.SSH.RunPrivately(ctx, script, stdout)
}

func (c *counted) WriteSmallFile(ctx context.Context, p string, data []byte, mode os.FileMode) error {
	c.n.Add(1)
	return c.SSH.WriteSmallFile(ctx, p, data, mode)
}

func (c *counted) WriteFileAtomic(ctx context.Context, p string, r io.Reader, mode os.FileMode) error {
	c.n.Add(1)
	return c.SSH.WriteFileAtomic(ctx, p, r, mode)
}

// countedHost is the harness's SSH host behind a counted transport.
func countedHost(t *testing.T) (*counted, *hosts.Host) {
	t.Helper()
	base := testharness.SSHHost(t)
	ssh, ok := base.Transport.(*hosts.SSH)
	if !ok {
		t.Fatalf("the harness host's transport is a %T", base.Transport)
	}
	tr := &counted{SSH: ssh}
	return tr, &hosts.Host{Transport: tr, RootDir: base.RootDir}
}

// Across a network each host command is a round trip: a create of a
// compose sandbox ready at its first look is two commands (its record,
// workspace, `compose up` and the wait on the host in one, then the ready
// record), whatever its services, and a destroy two (the record's read,
// then one that takes down, removes the workspace, then the record). What
// a provider process does once per host (the root's resolution) is paid
// by a first create, before counting.
func TestCreateAndDestroyAreTwoCommandsEach(t *testing.T) {
	testharness.RequireDocker(t)
	tr, h := countedHost(t)
	compose := os.Getenv("SANDBOXER_COMPOSE_CMD")
	if compose == "" {
		compose = "docker compose"
	}
	reg := backends.NewRegistry(composessh.New(compose))
	repo := testharness.ComposeRepo(t, testharness.Image(t), "web", "worker", "db")
	create := func() *backends.Sandbox {
		t.Helper()
		sb, err := reg.Create(ctx(t), backends.Request{ID: backends.NewID(), Profile: profile(t), Host: h,
			Inputs: map[string]string{"repo": repo}, Env: map[string]string{"TOKEN": "s3cret"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = reg.Destroy(context.Background(), h, sb.ID) })
		return sb
	}
	create()
	before := tr.n.Load()
	sb := create()
	if got := tr.n.Load() - before; got != 2 {
		t.Errorf("a create of three services took %d host commands, want 2", got)
	}
	if st, err := os.Stat(sb.WorkspaceDir + "/.env"); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the workspace's .env: %v, %v; want it, 0600", st, err)
	}
	before = tr.n.Load()
	if err := reg.Destroy(ctx(t), h, sb.ID); err != nil {
		t.Fatal(err)
	}
	if got := tr.n.Load() - before; got != 2 {
		t.Errorf("a destroy took %d host commands, want 2", got)
	}
	if left := leftovers(t, sb.ComposeProject); left != "" {
		t.Errorf("the destroy left: %s", left)
	}
	if _, err := os.Stat(sb.WorkspaceDir); !os.IsNotExist(err) {
		t.Errorf("the workspace remains: %v", err)
	}
	if _, _, err := reg.Get(ctx(t), h, sb.ID); err != backends.ErrNotFound {
		t.Errorf("the record after the destroy: %v, want none", err)
	}
}

// A provider process's first create asks the host once before its
// `compose up`: the compose command (detected, unless set), the root
// directory as the host resolves it and the subnets in use, in one command
// (firstLook). The create is then three commands: that look, the one that
// brings the stack up, and the ready record.
func TestFirstCreateOfAProcessLooksOnce(t *testing.T) {
	testharness.RequireDocker(t)
	tr, h := countedHost(t)
	reg := backends.NewRegistry(composessh.New(os.Getenv("SANDBOXER_COMPOSE_CMD")))
	sb, err := reg.Create(ctx(t), backends.Request{ID: backends.NewID(), Profile: profile(t), Host: h,
		Inputs: map[string]string{"repo": testharness.ComposeRepo(t, testharness.Image(t), "web", "worker")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Destroy(context.Background(), h, sb.ID) })
	if got := tr.n.Load(); got != 3 {
		t.Errorf("a process's first create took %d host commands, want 3", got)
	}
	if len(sb.ComposeCommand) == 0 {
		t.Errorf("the record names no compose command")
	}
	if _, st, err := reg.Get(ctx(t), h, sb.ID); err != nil || st.State != backends.StatusReady {
		t.Errorf("the sandbox after its create: %+v, %v; want it ready", st, err)
	}
}

// A first look that cannot resolve the root directory leaves it to the
// resolution's own command, whose diagnostic names the directory.
func TestFirstLookLeavesAFailureToItsOwnCall(t *testing.T) {
	testharness.RequireDocker(t)
	base := testharness.SSHHost(t)
	file := base.RootDir + "/a-file"
	if err := base.Run(ctx(t), "mkdir -p -- "+hosts.Quote(base.RootDir)+" && : > "+hosts.Quote(file), nil, nil); err != nil {
		t.Fatal(err)
	}
	h := &hosts.Host{Transport: base.Transport, RootDir: file + "/root"}
	reg := backends.NewRegistry(composessh.New(os.Getenv("SANDBOXER_COMPOSE_CMD")))
	_, err := reg.Create(ctx(t), backends.Request{ID: backends.NewID(), Profile: profile(t), Host: h,
		Inputs: map[string]string{"repo": testharness.ComposeRepo(t, testharness.Image(t), "web")}})
	if err == nil || !strings.Contains(err.Error(), "unable to create the directory "+file+"/root for workspaces") {
		t.Fatalf("a create under a root below a file: %v; want the root's diagnostic", err)
	}
}

// Under a root directory relative to the SSH user's home, the create's one
// command and the destroy's one resolve every path from the login
// directory, whatever the workspace's commands change to: nothing is left
// of the sandbox, its record and its network reservation included.
func TestCreateAndDestroyUnderARelativeRoot(t *testing.T) {
	testharness.RequireDocker(t)
	base := testharness.SSHHost(t)
	rel := "sandboxer-relative-" + backends.NewID()
	h := &hosts.Host{Transport: base.Transport, RootDir: rel}
	t.Cleanup(func() { _ = h.Run(context.Background(), "rm -rf -- "+hosts.Quote(rel), nil, nil) })
	reg := backends.NewRegistry(composessh.New(os.Getenv("SANDBOXER_COMPOSE_CMD")))
	sb, err := reg.Create(ctx(t), backends.Request{ID: backends.NewID(), Profile: profile(t), Host: h,
		Inputs: map[string]string{"repo": testharness.ComposeRepo(t, testharness.Image(t), "web", "worker")},
		Env:    map[string]string{"TOKEN": "s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Destroy(ctx(t), h, sb.ID); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(t, sb.ComposeProject); left != "" {
		t.Errorf("the destroy left: %s", left)
	}
	out, err := hosts.Output(ctx(t), h, "cd -- "+hosts.Quote(rel)+" && find . -mindepth 1 ! -path ./.sandboxer ! -path ./.sandboxer/sandboxes ! -path './.sandboxer/networks*' ! -path './.sandboxer/netops*' ! -path ./.sandboxer/compose-command -print; "+
		"find .sandboxer/networks -type f -name "+hosts.Quote("*"+sb.ID+"*")+" -print 2>/dev/null; true")
	if err != nil || len(out) > 0 {
		t.Errorf("under the root after the destroy: %q (%v); want nothing of the sandbox", out, err)
	}
}

// A stop or a start that an update asks for is two host commands: the
// records' read, then one that writes the record with the change and
// stops (or starts, and waits on the host) the stack.
func TestStopAndStartAreTwoCommandsEach(t *testing.T) {
	testharness.RequireDocker(t)
	tr, h := countedHost(t)
	reg := backends.NewRegistry(composessh.New(os.Getenv("SANDBOXER_COMPOSE_CMD")))
	repo := testharness.ComposeRepo(t, testharness.Image(t), "web", "worker")
	sb, err := reg.Create(ctx(t), backends.Request{ID: backends.NewID(), Profile: profile(t), Host: h, Inputs: map[string]string{"repo": repo}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Destroy(context.Background(), h, sb.ID) })
	for _, step := range []struct {
		desired, state string
		label          string
	}{{backends.DesiredStopped, backends.StatusStopped, "night"}, {backends.DesiredRunning, backends.StatusReady, "day"}} {
		before := tr.n.Load()
		_, st, err := reg.UpdateAndSetState(ctx(t), h, sb.ID, func(sb *backends.Sandbox) { sb.Labels = map[string]string{"when": step.label} }, step.desired)
		if err != nil {
			t.Fatal(err)
		}
		if got := tr.n.Load() - before; got != 2 {
			t.Errorf("setting %s took %d host commands, want 2", step.desired, got)
		}
		if st.State != step.state {
			t.Errorf("after setting %s the sandbox is %s, want %s", step.desired, st.State, step.state)
		}
		got, st, err := reg.Get(ctx(t), h, sb.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Desired() != step.desired || got.Labels["when"] != step.label || st.State != step.state {
			t.Errorf("on the host after setting %s: desired %s, labels %v, state %s", step.desired, got.Desired(), got.Labels, st.State)
		}
	}
}

// The stops (starts) an apply asks of a host at once are two host commands
// in all, however many: one read of the host's records, shared, then the
// stops side by side in one shell, rather than each waiting for a shell of
// its own.
func TestStopsAskedTogetherAreOneCommand(t *testing.T) {
	testharness.RequireDocker(t)
	tr, h := countedHost(t)
	reg := backends.NewRegistry(composessh.New(os.Getenv("SANDBOXER_COMPOSE_CMD")))
	repo := testharness.ComposeRepo(t, testharness.Image(t), "web")
	const n = 3
	ids := make([]string, n)
	for i := range ids {
		sb, err := reg.Create(ctx(t), backends.Request{ID: backends.NewID(), Profile: profile(t), Host: h, Inputs: map[string]string{"repo": repo}})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = sb.ID
		t.Cleanup(func() { _ = reg.Destroy(context.Background(), h, sb.ID) })
	}
	for _, step := range []struct{ desired, state string }{
		{backends.DesiredStopped, backends.StatusStopped}, {backends.DesiredRunning, backends.StatusReady},
	} {
		before := tr.n.Load()
		states := make([]string, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var st backends.Status
				_, st, errs[i] = reg.UpdateAndSetState(ctx(t), h, id, func(*backends.Sandbox) {}, step.desired)
				states[i] = st.State
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if got := tr.n.Load() - before; got != 2 {
			t.Errorf("setting %s on %d sandboxes at once took %d host commands, want 2 (the records' read, then the %d together)", step.desired, n, got, n)
		}
		for i, id := range ids {
			got, st, err := reg.Get(ctx(t), h, id)
			if err != nil {
				t.Fatal(err)
			}
			if states[i] != step.state || st.State != step.state || got.Desired() != step.desired {
				t.Errorf("sandbox %s after setting %s: answered %s, on the host %s, recorded %s", id, step.desired, states[i], st.State, got.Desired())
			}
		}
	}
	if out, err := hosts.Output(ctx(t), h, "ls -A -- "+hosts.Quote(h.Path(".sandboxer", "run"))); err != nil || len(out) > 0 {
		t.Errorf("the stops' scratch directory keeps %q (%v)", out, err)
	}
}

// A provider process of its own (an apply walk) stops a sandbox with the
// compose command its record names, detecting none first; one the host no
// longer has is detected again, and the stop still happens.
func TestStopUsesTheRecordedComposeCommand(t *testing.T) {
	testharness.RequireDocker(t)
	tr, h := countedHost(t)
	created := backends.NewRegistry(composessh.New(""))
	repo := testharness.ComposeRepo(t, testharness.Image(t), "web")
	sb, err := created.Create(ctx(t), backends.Request{ID: backends.NewID(), Profile: profile(t), Host: h, Inputs: map[string]string{"repo": repo}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = created.Destroy(context.Background(), h, sb.ID) })
	if len(sb.ComposeCommand) == 0 {
		t.Fatal("the create recorded no compose command")
	}

	fresh := backends.NewRegistry(composessh.New(""))
	before := tr.n.Load()
	if _, st, err := fresh.UpdateAndSetState(ctx(t), h, sb.ID, func(*backends.Sandbox) {}, backends.DesiredStopped); err != nil || st.State != backends.StatusStopped {
		t.Fatalf("stop: %v, %s", err, st.State)
	}
	if got := tr.n.Load() - before; got != 2 {
		t.Errorf("a stop in a new process took %d host commands, want 2 (the records' read, the stop): no detection", got)
	}

	// The host's compose moved: the record names one it no longer has.
	record := h.Path(".sandboxer", "sandboxes", sb.ID+".json")
	data, err := hosts.Output(ctx(t), h, "cat -- "+hosts.Quote(record))
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	rec["compose_command"] = []string{"/nonexistent/docker-compose"}
	if data, err = json.Marshal(rec); err != nil {
		t.Fatal(err)
	}
	if err := hosts.WriteFile(ctx(t), h, record, data, 0o600); err != nil {
		t.Fatal(err)
	}
	again := backends.NewRegistry(composessh.New(""))
	if _, st, err := again.UpdateAndSetState(ctx(t), h, sb.ID, func(*backends.Sandbox) {}, backends.DesiredRunning); err != nil || st.State != backends.StatusReady {
		t.Fatalf("start with a compose command the host does not have: %v, %s", err, st.State)
	}
}
