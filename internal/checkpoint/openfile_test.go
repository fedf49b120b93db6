package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A sandbox controls its workspace: a .env that is a symbolic link to a
// host file, or a FIFO, is refused at once by a capture that includes the
// env; it never copies the host file into the snapshot nor hangs.
func TestCaptureRefusesEnvThatIsNotAFile(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "host-secret")
	if err := os.WriteFile(secret, []byte("ROOT_TOKEN=host-only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, mk := range map[string]func(string) error{
		"symlink": func(p string) error { return os.Symlink(secret, p) },
		"fifo":    func(p string) error { return syscall.Mkfifo(p, 0o600) },
	} {
		t.Run(name, func(t *testing.T) {
			ws := t.TempDir()
			if err := os.WriteFile(filepath.Join(ws, "app.txt"), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := mk(filepath.Join(ws, ".env")); err != nil {
				t.Fatal(err)
			}
			s, err := Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := s.Capture(ws, CaptureOptions{ID: "snap-env", IncludeEnv: true, Now: time.Now()})
				done <- err
			}()
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("a capture hung on the workspace's .env")
			}
			if err == nil || !strings.Contains(err.Error(), ".env") {
				t.Fatalf("capture with a %s .env: %v", name, err)
			}
			if _, err := s.Load("snap-env"); err == nil {
				t.Fatal("a manifest was written")
			}
		})
	}
}
