package provider

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// built is the provider binary of this tree, built once per test process
// (linking it is several seconds of CPU) for every test that runs it.
var built struct {
	once sync.Once
	dir  string
	err  error
}

// builtProvider is a directory holding the provider binary built from
// this tree (terraform-provider-sandboxer), for a dev_overrides CLI
// config. TestMain removes it.
func builtProvider(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		// Not t.TempDir: it outlives the test that builds it (TestMain removes it).
		if built.dir, built.err = os.MkdirTemp("", "sandboxer-provider-"); built.err != nil { //nolint:usetesting // see above
			return
		}
		build := exec.Command("go", "build", "-o", filepath.Join(built.dir, "terraform-provider-sandboxer"), ".")
		build.Dir = filepath.Join("..", "..")
		if out, err := build.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.dir
}

// devCLIHeader is the terraform block a configuration for the built
// provider (dev_overrides, no init) starts with.
const devCLIHeader = `terraform {
  required_providers {
    sandboxer = { source = "sand-boxer/sandboxer" }
  }
}
`

// devCLI runs the real terraform CLI (TF_ACC_TERRAFORM_PATH) against the
// provider binary built from this tree, through a dev_overrides CLI config
// (as scripts/lib/devprovider.sh does): a separate process the test can
// kill, as a user's Ctrl-C-and-worse would.
type devCLI struct {
	t              *testing.T
	cli, cliConfig string
}

func newDevCLI(t *testing.T) *devCLI {
	t.Helper()
	cli := testharness.Env(t, "TF_ACC_TERRAFORM_PATH")
	plugins := builtProvider(t)
	cfg := filepath.Join(t.TempDir(), "cli.tfrc")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`provider_installation {
  dev_overrides {
    "sand-boxer/sandboxer" = %q
  }
  direct {}
}
`, plugins)), 0o600); err != nil {
		t.Fatal(err)
	}
	return &devCLI{t: t, cli: cli, cliConfig: cfg}
}

// dir makes a working directory holding config as main.tf.
func (c *devCLI) dir(config string) string {
	c.t.Helper()
	dir := c.t.TempDir()
	c.write(dir, config)
	return dir
}

func (c *devCLI) write(dir, config string) {
	c.t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(config), 0o600); err != nil {
		c.t.Fatal(err)
	}
}

func (c *devCLI) command(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command(c.cli, append(args, "-no-color")...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+c.cliConfig, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1", "TF_ACC=", "TF_LOG=")
	return cmd
}

// try runs a command to its end and returns its output.
func (c *devCLI) try(dir string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := c.command(dir, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// run is try, failing the test on an error.
func (c *devCLI) run(dir string, args ...string) string {
	c.t.Helper()
	out, err := c.try(dir, args...)
	if err != nil {
		c.t.Fatalf("%s %s: %v\n%s", filepath.Base(c.cli), strings.Join(args, " "), err, out)
	}
	return out
}

// running is a CLI command started in a process group of its own: the
// CLI and the provider process it starts.
type running struct {
	cmd *exec.Cmd
	out *bytes.Buffer
}

func (c *devCLI) start(dir string, args ...string) *running {
	c.t.Helper()
	r := &running{cmd: c.command(dir, args...), out: &bytes.Buffer{}}
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := r.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL) // the test failed before killing it
			_ = r.cmd.Wait()
		}
	})
	return r
}

// kill sends SIGKILL to the process group and returns once no process of
// it is left (the provider is gone, no cleanup of its ran).
func (r *running) kill(t *testing.T) {
	t.Helper()
	pgid := r.cmd.Process.Pid
	if r.cmd.ProcessState != nil {
		t.Fatalf("the CLI ended before it was killed:\n%s", r.out)
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = r.cmd.Wait() // killed: its status says so
	waitOrFail(t, 30*time.Second, "the killed process group to be gone", func() bool {
		return errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
	})
}
