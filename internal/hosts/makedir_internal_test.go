package hosts

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A copy that the host cannot unpack fails with tar's complaint and
// leaves no tar file in the directory.
func TestUnpackIntoFailureLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	err := unpackInto(context.Background(), &Local{Name: "local"}, dir, []byte("this is not a tar archive, not even close to one"))
	if err == nil {
		t.Fatal("unpacking garbage succeeded")
	}
	if !IsExitCode(err, 2) {
		t.Errorf("error %v, want tar's exit status 2", err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	hidden, _ := filepath.Glob(filepath.Join(dir, ".*"))
	if len(left)+len(hidden) != 0 {
		t.Errorf("left behind: %v %v", left, hidden)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("the directory itself went: %v", err)
	}
}
