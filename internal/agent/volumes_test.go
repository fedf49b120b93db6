package agent

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// helperWrapper puts on PATH a docker that is the real one, except that a
// `docker run` of a volume restore helper, once the real one has exited,
// holds its own end until the test writes a line to the FIFO it returns,
// then exits with rc (the real status when rc is ""): an engine whose
// teardown of the helper is slow, and one that fails it. It also makes
// this root agent use helper containers, as a non-root user's does: a
// docker context of its own is not this machine's engine for localEngine.
func helperWrapper(t *testing.T, rc string) (release string) {
	t.Helper()
	real, err := exec.LookPath("docker")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	release = filepath.Join(dir, "release")
	if err := syscall.Mkfifo(release, 0o600); err != nil {
		t.Fatal(err)
	}
	if rc == "" {
		rc = "$rc"
	}
	script := `#!/bin/sh
case " $* " in
*" volume-restore "*)
	` + real + ` "$@"
	rc=$?
	read -r _ <` + release + `
	exit ` + rc + ` ;;
esac
exec ` + real + ` "$@"
`
	if err := os.WriteFile(filepath.Join(dir, "docker"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	cfg := t.TempDir()
	t.Setenv("DOCKER_CONFIG", cfg)
	if out, err := exec.Command(real, "context", "create", "sandboxer-test", "--docker", "host=unix:///var/run/docker.sock").CombinedOutput(); err != nil {
		t.Fatalf("docker context create: %v: %s", err, out)
	}
	t.Setenv("DOCKER_CONTEXT", "sandboxer-test")
	// A test that failed before releasing it must not leave the wrapper
	// waiting (a no-op when none waits).
	t.Cleanup(func() {
		if f, err := os.OpenFile(release, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			_, _ = f.WriteString("go\n")
			_ = f.Close()
		}
	})
	return release
}

// releaseHelper lets the held helper end, once the wrapper waits for it.
func releaseHelper(ctx context.Context, t *testing.T, fifo string) {
	t.Helper()
	opened := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0) // returns once the wrapper reads
		if err == nil {
			_, err = f.WriteString("go\n")
			_ = f.Close()
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the helper's docker run never came to wait for its end")
	}
}

// projectName is a fresh compose project name.
func projectName(t *testing.T, role string) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := crand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "sbx-agenttest-" + role + "-" + hex.EncodeToString(b)
}

// A restore answers for its volumes as soon as they are written, before
// the helper containers that wrote them are gone (their teardown waits for
// the data to reach the disk): into a new sandbox (the volumes part of
// RestoreNew) and in place (RestoreAnswered), the caller starts the
// services meanwhile, and waits for the rest with end, which reports a
// helper that failed after its answer.
func TestRestoreAnswersBeforeTheHelpersAreGone(t *testing.T) {
	testharness.RequireDocker(t)
	for _, c := range []struct {
		name, rc, wantEnd string
		inPlace           bool
	}{
		{name: "the helper ends well"},
		{name: "the helper fails after its answer", rc: "3", wantEnd: "volume-restore"},
		{name: "in place", inPlace: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			release := helperWrapper(t, c.rc)
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			h := testharness.LocalHost(t)
			src, dst := projectName(t, "src"), projectName(t, "dst")
			for _, p := range []string{src, dst} {
				t.Cleanup(func() { _ = exec.Command("docker", "volume", "rm", "-f", p+"_data").Run() })
			}
			if out, err := exec.Command("docker", "volume", "create", "--label", labelProject+"="+src, "--label", labelVolume+"=data", src+"_data").CombinedOutput(); err != nil {
				t.Fatalf("docker volume create: %v: %s", err, out)
			}
			testharness.InVolume(t, src+"_data", "mkdir -p /v/d && echo one > /v/a.txt && echo two > /v/d/b.txt && chown 7:7 /v/d/b.txt")
			ws := filepath.Join(h.RootDir, "ws")
			if err := os.MkdirAll(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(ws, "compose.yaml"), []byte("services: {}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			c0 := NewClient()
			snap, err := c0.Snapshot(ctx, h, ws, &Volumes{Project: src}, checkpoint.CaptureOptions{ID: "snap-1", Name: "one", Now: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			if len(snap.VolumeNames) != 1 {
				t.Fatalf("volumes captured: %v", snap.VolumeNames)
			}

			target := filepath.Join(h.RootDir, "new")
			if err := os.Mkdir(target, 0o700); err != nil {
				t.Fatal(err)
			}
			res, fill, err := c0.RestoreNew(ctx, h, "snap-1", h, target, &Volumes{Project: dst}, checkpoint.RestoreOptions{Files: true, Env: true, Overwrite: true})
			if err != nil {
				t.Fatal(err)
			}
			if fill == nil || res.FilesRestored != 1 {
				t.Fatalf("workspace part: %d files restored, fill %v; want the compose file alone, and a fill", res.FilesRestored, fill != nil)
			}
			if _, err := os.Stat(filepath.Join(target, "compose.yaml")); err != nil {
				t.Fatal(err)
			}
			// The wrapper holds the helper's end until released below: a
			// fill that waited for it would not return (until ctx ends).
			vres, end, err := fill(ctx)
			if err != nil {
				t.Fatalf("fill: %v (a fill that waits for its helper's end returns only when ctx ends)", err)
			}
			if vres.FilesRestored != 2 {
				t.Errorf("volumes part: %d files restored, want 2", vres.FilesRestored)
			}
			if got := testharness.InVolume(t, dst+"_data", "cat /v/a.txt /v/d/b.txt; stat -c %u:%g /v/d/b.txt"); got != "one\ntwo\n7:7" {
				t.Errorf("the new volume holds %q", got)
			}
			releaseHelper(ctx, t, release)
			err = end()
			if c.wantEnd == "" && err != nil {
				t.Fatalf("end: %v", err)
			}
			if c.wantEnd != "" && (err == nil || !strings.Contains(err.Error(), c.wantEnd) || !strings.Contains(err.Error(), dst+"_data")) {
				t.Fatalf("end: %v; want an error naming the volume and %q", err, c.wantEnd)
			}
			if c.inPlace {
				testharness.InVolume(t, dst+"_data", "echo broken > /v/a.txt; echo junk > /v/junk.txt")
				res, end, err := c0.RestoreAnswered(ctx, h, "snap-1", h, target, &Volumes{Project: dst},
					checkpoint.RestoreOptions{Files: true, Overwrite: true, Prune: true})
				if err != nil {
					t.Fatalf("in place: %v (a restore that waits for its helper's end returns only when ctx ends)", err)
				}
				if got := testharness.InVolume(t, dst+"_data", "cat /v/a.txt; ls /v"); got != "one\na.txt\nd" || res.Pruned != 1 {
					t.Errorf("in place: the volume holds %q, %d pruned", got, res.Pruned)
				}
				releaseHelper(ctx, t, release)
				if err := end(); err != nil {
					t.Fatalf("in place: end: %v", err)
				}
			}
			out, err := exec.Command("docker", "ps", "-aq", "--filter", "label="+helperLabel).Output()
			if err != nil || strings.TrimSpace(string(out)) != "" {
				t.Errorf("helper containers after the end: %q (%v)", out, err)
			}
		})
	}
}
