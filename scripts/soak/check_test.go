//go:build linux

package main

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// The check of leftovers sees a sandbox's container, network and volume
// once its record is gone, and none of them while it stands: each kind is
// read with its own template (a container's labels are under .Config).
func TestLeftoversSeesEngineObjects(t *testing.T) {
	testharness.RequireDocker(t)
	image := testharness.Image(t)
	id := fmt.Sprintf("%012x", time.Now().UnixNano()&0xffffffffffff)
	project := "sbx-" + id
	root := t.TempDir()
	docker := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("docker", args...).CombinedOutput(); err != nil {
			t.Fatalf("docker %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	label := "com.docker.compose.project=" + project
	t.Cleanup(func() {
		_ = exec.Command("docker", "rm", "-f", project+"-db-1").Run()
		_ = exec.Command("docker", "network", "rm", project+"_default").Run()
		_ = exec.Command("docker", "volume", "rm", "-f", project+"_data").Run()
	})
	docker("network", "create", "--label", label, project+"_default")
	docker("volume", "create", "--label", label, project+"_data")
	docker("create", "--name", project+"-db-1", "--label", label,
		"--label", "com.docker.compose.project.working_dir="+root+"/"+id, image, "true")

	s := &soak{root: root}
	if left := s.leftovers(map[string]bool{id: true}); len(left) != 0 {
		t.Fatalf("a sandbox whose record stands has leftovers: %q", left)
	}
	left := s.leftovers(map[string]bool{})
	for _, kind := range []string{"container", "network", "volume"} {
		found := false
		for _, l := range left {
			found = found || strings.HasPrefix(l, kind+" ") && strings.HasSuffix(l, " of sandbox "+id)
		}
		if !found {
			t.Errorf("no %s of sandbox %s among the leftovers: %q", kind, id, left)
		}
	}
}
