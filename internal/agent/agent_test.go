package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
)

func TestMain(m *testing.M) {
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
		r.Read(buf)
		p := filepath.Join(ws, fmt.Sprintf("d%02d", i%20), fmt.Sprintf("f%03d.bin", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
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
	objects, _ := filepath.Glob(filepath.Join(store, "objects", "*", "*"))
	for _, o := range objects {
		data, _ := os.ReadFile(o)
		sum := sha256.Sum256(data)
		if filepath.Base(filepath.Dir(o))+filepath.Base(o) != hex.EncodeToString(sum[:]) {
			t.Fatalf("object %s does not hold what its name says", o)
		}
	}
}

func startSnapshot(t *testing.T, ws, store string) (*exec.Cmd, func()) {
	t.Helper()
	req, _ := json.Marshal(Request{Store: store, Workspace: ws, Capture: checkpoint.CaptureOptions{ID: "snap-1", Now: time.Now()}})
	cmd := exec.Command(os.Args[0], Command, "snapshot")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stdin.Write(append(req, '\n'))
	t.Cleanup(func() { t.Log("agent stderr: ", stderr.String()) })
	return cmd, func() { stdin.Close() }
}

func TestCaptureAbortsWhenTheClientGoes(t *testing.T) {
	ws, store := bigWorkspace(t), filepath.Join(t.TempDir(), "store")
	cmd, closeStdin := startSnapshot(t, ws, store)
	time.Sleep(20 * time.Millisecond)
	closeStdin() // the connection is cut
	if err := cmd.Wait(); err == nil {
		t.Fatal("the agent reported success after its client went away")
	}
	checkStoreTrustworthy(t, store)
}

func TestCaptureKilledMidwayLeavesNothingTrusted(t *testing.T) {
	ws, store := bigWorkspace(t), filepath.Join(t.TempDir(), "store")
	cmd, closeStdin := startSnapshot(t, ws, store)
	defer closeStdin()
	time.Sleep(30 * time.Millisecond)
	cmd.Process.Kill()
	cmd.Wait()
	checkStoreTrustworthy(t, store)
	// A later snapshot of the same workspace is complete and restorable.
	s, err := checkpoint.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Capture(ws, checkpoint.CaptureOptions{ID: "snap-2", Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Restore("snap-2", t.TempDir(), checkpoint.RestoreOptions{Files: true}); err != nil {
		t.Fatal(err)
	}
}

func TestCaptureCompletesWhileTheClientWaits(t *testing.T) {
	ws, store := bigWorkspace(t), filepath.Join(t.TempDir(), "store")
	cmd, closeStdin := startSnapshot(t, ws, store)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("snapshot failed: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("snapshot did not finish")
	}
	closeStdin()
	if m, _ := filepath.Glob(filepath.Join(store, "snapshots", "snap-1.json")); len(m) != 1 {
		t.Fatal("no manifest after a completed snapshot")
	}
}
