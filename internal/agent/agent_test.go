package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
)

// goneFIFOEnv names, for an agent a test starts (this binary, run as the
// agent), a FIFO the agent writes a line to once it has seen its client go:
// the test side of the clientGone hook.
const goneFIFOEnv = "SANDBOXER_AGENT_TEST_GONE_FIFO"

// pauseEnv names, for an agent a test starts, "FILE:REACHED:RELEASE": the
// capture stops before reading FILE, opens the FIFO REACHED for writing
// (the test's open of its reading end returns: the capture is there) and
// then the FIFO RELEASE for reading (it goes on once the test opened and
// closed its writing end).
const pauseEnv = "SANDBOXER_AGENT_TEST_PAUSE"

func TestMain(m *testing.M) {
	if p := os.Getenv(goneFIFOEnv); p != "" {
		clientGone = func() { _ = os.WriteFile(p, []byte("gone\n"), 0o600) }
	}
	if spec := os.Getenv(pauseEnv); spec != "" {
		at, fifos, _ := strings.Cut(spec, ":")
		reached, release, _ := strings.Cut(fifos, ":")
		checkpoint.TestHookBeforeStore = func(rel string) {
			if rel != at {
				return
			}
			if f, err := os.OpenFile(reached, os.O_WRONLY, 0); err == nil {
				_ = f.Close()
			}
			if f, err := os.OpenFile(release, os.O_RDONLY, 0); err == nil {
				_, _ = io.Copy(io.Discard, f)
				_ = f.Close()
			}
		}
	}
	RunIfRequested()
	os.Exit(m.Run())
}

// bigWorkspace makes a workspace that takes a noticeable time to capture.
func bigWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	r := rand.New(rand.NewSource(1))
	buf := make([]byte, 256<<10)
	for i := 0; i < 400; i++ {
		if _, err := r.Read(buf); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(ws, fmt.Sprintf("d%02d", i%20), fmt.Sprintf("f%03d.bin", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// checkStoreTrustworthy: no manifest, and every object is named by the
// digest of its content (no half object under a real name).
func checkStoreTrustworthy(t *testing.T, store string) {
	t.Helper()
	if m, _ := filepath.Glob(filepath.Join(store, "snapshots", "*.json")); len(m) != 0 {
		t.Fatalf("an interrupted snapshot left a manifest: %v", m)
	}
	if err := checkpoint.VerifyObjects(store); err != nil {
		t.Fatalf("an object does not hold what its name says: %v", err)
	}
}

// agentRun is an agent process (this binary) running one snapshot.
type agentRun struct {
	cmd        *exec.Cmd
	stderr     *strings.Builder
	exited     chan error   // cmd.Wait's result, once
	closeStdin func() error // the client goes
}

func startSnapshot(t *testing.T, ws, store string, opts checkpoint.CaptureOptions, env ...string) *agentRun {
	t.Helper()
	opts.ID, opts.Now = "snap-1", time.Now()
	req, _ := json.Marshal(Request{Store: store, Workspace: ws, Capture: opts})
	cmd := exec.Command(os.Args[0], Command, "snapshot")
	cmd.Env = append(os.Environ(), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	r := &agentRun{cmd: cmd, stderr: &strings.Builder{}, exited: make(chan error, 1), closeStdin: stdin.Close}
	cmd.Stderr = r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		t.Log("agent stderr: ", r.stderr.String())
	})
	if _, err := stdin.Write(append(req, '\n')); err != nil {
		t.Fatal(err)
	}
	return r
}

// openFIFOEnd opens FIFO path for writing (or reading), which returns once
// the agent has opened the other end; it fails the test if the agent exits
// first or nothing happens for a minute.
func (r *agentRun) openFIFOEnd(t *testing.T, path string, flag int) *os.File {
	t.Helper()
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := os.OpenFile(path, flag, 0)
		ch <- opened{f, err}
	}()
	// On failure, open the other end ourselves so the goroutine ends.
	unblock := func() {
		other := os.O_RDONLY
		if flag == os.O_RDONLY {
			other = os.O_RDWR
		}
		if f, err := os.OpenFile(path, other|syscall.O_NONBLOCK, 0); err == nil {
			_ = f.Close() // opened only to unblock the goroutine; nothing written
		}
	}
	select {
	case o := <-ch:
		if o.err != nil {
			t.Fatal(o.err)
		}
		return o.f
	case err := <-r.exited:
		unblock()
		t.Fatalf("the agent exited (%v) without opening %s (see pausedSnapshot and pauseEnv)", err, path)
	case <-time.After(time.Minute):
		unblock()
		t.Fatalf("the agent did not open %s within a minute", path)
	}
	return nil
}

// pausedAt is the file a paused capture is reading; the files before it
// (f00 to f09) are stored, the ones after it not begun.
const (
	pausedAt       = "f10"
	storedBeforeIt = 10
)

// pausedSnapshot starts the agent capturing a workspace of files f00 to
// f19, one file at a time, and returns once the capture is provably in its
// middle: files f00 to f09 stored as objects, f10 about to be read, no
// manifest written nor possible until the test lets it go on (release) or
// kills the agent. No sleep: the agent holds itself at f10 through
// checkpoint.TestHookBeforeStore (see TestMain and pauseEnv) and says so on
// a FIFO the test waits on.
//
// extraEnv is added to the agent's environment.
func pausedSnapshot(t *testing.T, extraEnv ...string) (r *agentRun, ws, store string, release func()) {
	t.Helper()
	ws, aside := t.TempDir(), t.TempDir()
	store = filepath.Join(t.TempDir(), "store")
	for i := 0; i < 20; i++ {
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%02d", i)), []byte(fmt.Sprintf("content of file %02d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reached, releaseFIFO := filepath.Join(aside, "reached"), filepath.Join(aside, "release")
	for _, p := range []string{reached, releaseFIFO} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := append([]string{pauseEnv + "=" + pausedAt + ":" + reached + ":" + releaseFIFO}, extraEnv...)
	r = startSnapshot(t, ws, store, checkpoint.CaptureOptions{Workers: 1}, env...)
	at := r.openFIFOEnd(t, reached, os.O_RDONLY) // the capture is at f10
	if _, err := io.ReadAll(at); err != nil {
		t.Fatal(err)
	}
	_ = at.Close()

	objects, _ := filepath.Glob(filepath.Join(store, "objects", "*", "*"))
	if len(objects) != storedBeforeIt {
		t.Fatalf("paused at %s, the store holds %d objects; want the %d files before it", pausedAt, len(objects), storedBeforeIt)
	}
	released := false
	return r, ws, store, func() {
		if released {
			return
		}
		released = true
		_ = r.openFIFOEnd(t, releaseFIFO, os.O_WRONLY).Close()
	}
}

// The client goes (the connection is cut) while the capture is provably
// mid-way: the agent fails, writes no manifest, and leaves only objects
// that hold what their names say.
func TestCaptureAbortsWhenTheClientGoes(t *testing.T) {
	gone := filepath.Join(t.TempDir(), "gone")
	if err := syscall.Mkfifo(gone, 0o600); err != nil {
		t.Fatal(err)
	}
	r, _, store, release := pausedSnapshot(t, goneFIFOEnv+"="+gone)
	if err := r.closeStdin(); err != nil { // the connection is cut
		t.Fatal(err)
	}
	// The agent has seen it go and signalled the abort (clientGone) ...
	g := r.openFIFOEnd(t, gone, os.O_RDONLY)
	if _, err := io.ReadAll(g); err != nil {
		t.Fatal(err)
	}
	_ = g.Close() // only read
	// ... before the capture may go on past f10.
	release()
	select {
	case err := <-r.exited:
		if err == nil {
			t.Fatal("the agent reported success after its client went away")
		}
	case <-time.After(time.Minute):
		t.Fatal("the agent did not stop after its client went away")
	}
	if !strings.Contains(r.stderr.String(), "aborted") {
		t.Fatalf("the agent failed for another reason than its client going: %s", r.stderr.String())
	}
	checkStoreTrustworthy(t, store)
}

// The agent killed while the capture is provably mid-way (files stored,
// one half read, the rest not begun) leaves no manifest and no object
// under a name its content does not have; the half-read file is at most a
// temporary file. A later capture is complete and restorable.
func TestCaptureKilledMidwayLeavesNothingTrusted(t *testing.T) {
	r, ws, store, _ := pausedSnapshot(t)
	if err := r.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("the killed agent: %v", <-r.exited)
	checkStoreTrustworthy(t, store)
	if objects, _ := filepath.Glob(filepath.Join(store, "objects", "*", "*")); len(objects) != storedBeforeIt {
		t.Fatalf("after the kill the store holds %d objects; want the %d stored before it", len(objects), storedBeforeIt)
	}
	// A later snapshot of the same workspace is complete and restorable.
	s, err := checkpoint.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := s.Capture(ws, checkpoint.CaptureOptions{ID: "snap-2", Now: time.Now()}); err != nil || m.FileCount != 20 {
		t.Fatalf("a later capture: %v", err)
	}
	into := t.TempDir()
	if _, err := s.Restore("snap-2", into, checkpoint.RestoreOptions{Files: true}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		name := fmt.Sprintf("f%02d", i)
		if got, err := os.ReadFile(filepath.Join(into, name)); err != nil || string(got) != fmt.Sprintf("content of file %02d\n", i) {
			t.Fatalf("restored %s: %q, %v", name, got, err)
		}
	}
}

func TestCaptureCompletesWhileTheClientWaits(t *testing.T) {
	ws, store := bigWorkspace(t), filepath.Join(t.TempDir(), "store")
	r := startSnapshot(t, ws, store, checkpoint.CaptureOptions{})
	select {
	case err := <-r.exited:
		if err != nil {
			t.Fatalf("snapshot failed: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("snapshot did not finish")
	}
	// Wait closed it already, once the agent exited.
	if err := r.closeStdin(); err != nil && !errors.Is(err, os.ErrClosed) {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(filepath.Join(store, "snapshots", "snap-1.json")); len(m) != 1 {
		t.Fatal("no manifest after a completed snapshot")
	}
}

// A request in the agent's environment (RequestEnv), as a client passes a
// small one in a host's shell, is the request: the agent answers it, and
// the processes it starts do not inherit it.
func TestRequestInTheEnvironment(t *testing.T) {
	store := t.TempDir()
	body, err := json.Marshal(Request{Store: store, Digests: []string{"sha256:" + strings.Repeat("0", 64)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(RequestEnv, string(body))
	var out, errs bytes.Buffer
	if code := Main([]string{"missing"}, strings.NewReader(""), &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	if got := strings.TrimSpace(out.String()); got != `["sha256:`+strings.Repeat("0", 64)+`"]` {
		t.Errorf("answered %s", got)
	}
	if _, ok := os.LookupEnv(RequestEnv); ok {
		t.Error("the request stays in the environment of what the agent starts")
	}
	if cmd := withRequest(body, "agent op"); strings.Count(cmd, "agent op") != 1 || !strings.HasPrefix(cmd, RequestEnv+"=") {
		t.Errorf("withRequest = %s", cmd)
	}
}
