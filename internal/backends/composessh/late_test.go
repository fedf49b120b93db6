package composessh_test

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/composessh"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// A create's command that outlived its connection (the host did not
// notice the link go) still runs when the create's cleanup, or a destroy,
// tears the sandbox down; left to run, its `compose up` makes containers
// no record names. The teardown ends every process of it first. Here the
// late command is a process of the SSH user's carrying the create's
// marker, as each process of that command does.
func TestTeardownEndsACreatesLateCommand(t *testing.T) {
	testharness.RequireDocker(t)
	// A local host passes each script in its shell's environment: the
	// teardown must not take itself for the late command.
	for name, host := range map[string]func(testing.TB) *hosts.Host{"ssh": testharness.SSHHost, "local": testharness.LocalHost} {
		t.Run(name, func(t *testing.T) {
			h := host(t)
			reg := backends.NewRegistry(composessh.New(os.Getenv("SANDBOXER_COMPOSE_CMD")))
			sb, err := reg.Create(ctx(t), backends.Request{ID: backends.NewID(), Profile: profile(t), Host: h,
				Inputs: map[string]string{"repo": testharness.ComposeRepo(t, testharness.Image(t), "app")}})
			if err != nil {
				t.Fatal(err)
			}
			late := exec.Command("sh", "-c", "while :; do sleep 1; done")
			late.Env = append(os.Environ(), composessh.CreateMarker+"="+sb.ID)
			if err := late.Start(); err != nil {
				t.Fatal(err)
			}
			ended := make(chan error, 1)
			go func() { ended <- late.Wait() }()
			t.Cleanup(func() { _ = late.Process.Kill() })
			if err := reg.Destroy(ctx(t), h, sb.ID); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-ended:
				if err == nil {
					t.Error("the late command ended by itself; want it killed")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the destroy returned with the create's late command still running")
			}
			if left := leftovers(t, sb.ComposeProject); left != "" {
				t.Errorf("the destroy left: %s", left)
			}
		})
	}
}
