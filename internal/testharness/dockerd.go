package testharness

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// PrivateDockerd is a docker engine of the test's own: its own data and
// exec roots, pid file, socket and managed containerd, no default bridge
// and no iptables rules, so that stopping and restarting it (an engine
// going away under a sandbox) never disturbs the harness's shared engine or
// the other tests using it. Compose networks it creates are bridges in the
// machine's network namespace: give its sandboxes a network_pool of their
// own. The harness image is loaded into it.
type PrivateDockerd struct {
	t testing.TB
	// Socket is the engine's unix socket; DockerHost the DOCKER_HOST value
	// naming it (for an sshd's `SetEnv DOCKER_HOST=...`).
	Socket, DockerHost string
	dir, log           string
	args               []string
	cmd                *exec.Cmd
	exited             chan struct{} // closed when cmd has exited
}

// privateAddressPool is where the private engine's own networks come from
// (compose networks without a provider-chosen subnet): apart from the
// harness engine's pools and the provider's default network_pool.
const privateAddressPool = "base=10.215.0.0/16,size=24"

// StartPrivateDockerd starts one and loads the harness image into it; when
// the test ends its containers are removed and it is stopped, its
// directories removed. Needs root and the harness engine (for the image).
func StartPrivateDockerd(t testing.TB) *PrivateDockerd {
	t.Helper()
	image := Image(t)
	if os.Geteuid() != 0 {
		if os.Getenv("SANDBOXER_REQUIRE_HARNESS") == "1" {
			t.Fatal("a private dockerd needs root")
		}
		t.Skip("a private dockerd needs root")
	}
	if _, err := exec.LookPath("dockerd"); err != nil {
		t.Fatalf("dockerd: %v", err)
	}
	// Not t.TempDir(): containerd's sockets live under the exec root, and
	// a unix socket path must stay under 108 bytes.
	dir, err := os.MkdirTemp("", "sbxd") //nolint:usetesting // t.TempDir's paths are too long for the sockets under it
	if err != nil {
		t.Fatal(err)
	}
	d := &PrivateDockerd{t: t, dir: dir, Socket: filepath.Join(dir, "docker.sock"), log: filepath.Join(dir, "dockerd.log")}
	d.DockerHost = "unix://" + d.Socket
	if err := os.WriteFile(filepath.Join(dir, "daemon.json"), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d.args = []string{
		"--data-root", filepath.Join(dir, "data"),
		"--exec-root", filepath.Join(dir, "exec"),
		"--pidfile", filepath.Join(dir, "docker.pid"),
		"--config-file", filepath.Join(dir, "daemon.json"), // not /etc/docker/daemon.json
		"-H", d.DockerHost,
		"--bridge=none", "--iptables=false", "--ip-masq=false",
		"--default-address-pool", privateAddressPool,
		// Namespaces and cgroups of its own, should it find a shared containerd.
		"--containerd-namespace", "sandboxer-test", "--containerd-plugins-namespace", "sandboxer-test-plugins",
		"--cgroup-parent", "/sandboxer-test-" + filepath.Base(dir),
		"--shutdown-timeout", "5",
	}
	t.Cleanup(d.cleanup)
	d.Start()

	// The harness image, as the shared engine has it (nothing can be pulled).
	save := exec.Command("docker", "save", image)
	load := d.Command("load", "-q")
	pipe, err := save.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	load.Stdin = pipe
	var saveErr strings.Builder
	save.Stderr = &saveErr
	if err := save.Start(); err != nil {
		t.Fatalf("docker save %s: %v", image, err)
	}
	out, lerr := load.CombinedOutput()
	if err := save.Wait(); err != nil || lerr != nil {
		t.Fatalf("loading %s into the private dockerd: save: %v %s; load: %v %s", image, err, saveErr.String(), lerr, out)
	}
	return d
}

// Command is a docker CLI command against the private engine.
func (d *PrivateDockerd) Command(args ...string) *exec.Cmd {
	cmd := exec.Command("docker", args...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+d.DockerHost, "DOCKER_CONTEXT=")
	return cmd
}

// Start starts the engine (again) and returns once it answers.
func (d *PrivateDockerd) Start() {
	d.t.Helper()
	if err := d.start(); err != nil {
		d.t.Fatal(err)
	}
}

func (d *PrivateDockerd) start() error {
	logf, err := os.OpenFile(d.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	d.cmd = exec.Command("dockerd", d.args...)
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	// A session of its own: a signal to the test's process group is not
	// the engine's.
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := d.cmd.Start(); err != nil {
		_ = logf.Close() // the start failed; nothing was written
		d.cmd = nil
		return fmt.Errorf("dockerd: %w", err)
	}
	exited := make(chan struct{})
	d.exited = exited
	go func(cmd *exec.Cmd) {
		_ = cmd.Wait() // the exit is what Stop waits for; its status is not needed
		_ = logf.Close()
		close(exited)
	}(d.cmd)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if err := d.Command("version", "--format", "{{.Server.Version}}").Run(); err == nil {
			return nil
		}
		select {
		case <-exited:
			d.cmd = nil
			return fmt.Errorf("the private dockerd exited while starting; its log:\n%s", d.logTail())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the private dockerd did not answer within 60s; its log:\n%s", d.logTail())
		}
		time.Sleep(100 * time.Millisecond) // polling a socket that does not answer yet
	}
}

// Stop stops the engine as an init system would (SIGTERM: its containers
// are stopped, its containerd with it) and returns once it has exited;
// one that does not exit within a minute is killed.
func (d *PrivateDockerd) Stop() {
	if d.cmd == nil || d.cmd.Process == nil {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM) // an exited engine needs no signal
	select {
	case <-d.exited:
	case <-time.After(time.Minute):
		_ = d.cmd.Process.Kill() // it did not stop: the test is failing anyway
		<-d.exited
	}
	d.cmd = nil
}

// Restart stops the engine and starts it again. Unlike Start it may run
// on any goroutine (while an apply runs): it returns its failure.
func (d *PrivateDockerd) Restart() error {
	d.Stop()
	return d.start()
}

// Leftovers lists what the engine holds besides the harness image:
// containers (running or not), compose networks and volumes. Every such
// object on a private engine is the test's.
func (d *PrivateDockerd) Leftovers() []string {
	d.t.Helper()
	var left []string
	for _, q := range []struct {
		kind string
		args []string
	}{
		{"container", []string{"ps", "-aq"}},
		{"network", []string{"network", "ls", "-q", "--filter", "label=com.docker.compose.project"}},
		{"volume", []string{"volume", "ls", "-q"}},
	} {
		out, err := d.Command(q.args...).Output()
		if err != nil {
			d.t.Fatalf("docker %s on the private dockerd: %v", strings.Join(q.args, " "), err)
		}
		for _, id := range strings.Fields(string(out)) {
			left = append(left, q.kind+" "+id)
		}
	}
	return left
}

func (d *PrivateDockerd) logTail() string {
	data, _ := os.ReadFile(d.log) // a missing log is an empty one
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	return strings.Join(lines[max(0, len(lines)-30):], "\n")
}

// cleanup removes whatever the test left in the engine, stops it, and
// removes its directories (unmounting what it left mounted there first).
func (d *PrivateDockerd) cleanup() {
	if d.cmd != nil {
		// Best effort, each: the data root goes below; networks are pruned
		// here, as their bridges live in the machine's network namespace.
		if out, err := d.Command("ps", "-aq").Output(); err == nil && len(strings.Fields(string(out))) > 0 {
			_ = d.Command(append([]string{"rm", "-f", "-v"}, strings.Fields(string(out))...)...).Run()
		}
		_ = d.Command("network", "prune", "-f").Run()
		_ = d.Command("volume", "prune", "-f").Run()
	}
	d.Stop()
	if f, err := os.Open("/proc/self/mounts"); err == nil {
		var mounts []string
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if fields := strings.Fields(sc.Text()); len(fields) > 1 && strings.HasPrefix(fields[1], d.dir+"/") {
				mounts = append(mounts, fields[1])
			}
		}
		_ = f.Close() // only read
		for i := len(mounts) - 1; i >= 0; i-- {
			_ = exec.Command("umount", "-l", mounts[i]).Run() // best effort: RemoveAll says what stays
		}
	}
	if err := os.RemoveAll(d.dir); err != nil {
		d.t.Errorf("removing the private dockerd's directory: %v", err)
	}
}
