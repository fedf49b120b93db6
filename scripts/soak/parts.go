//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The real parts the soak runs against and breaks: a journalled ext4
// loop-mounted as the host's root directory, an sshd of its own (as the
// harness runs them, sftp-server included) and a toxiproxy in front of it.

// run runs a command, returning its combined output on failure.
func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// loopFS is a journalled ext4 file system in a file, mounted at dir.
type loopFS struct{ image, dir string }

func mountLoop(work string, size string) (*loopFS, error) {
	l := &loopFS{image: filepath.Join(work, "root.ext4"), dir: filepath.Join(work, "root")}
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return nil, err
	}
	if err := run("truncate", "-s", size, l.image); err != nil {
		return nil, err
	}
	if err := run("mkfs.ext4", "-q", "-F", "-j", l.image); err != nil {
		return nil, err
	}
	if err := run("mount", "-o", "loop", l.image, l.dir); err != nil {
		return nil, err
	}
	// mkfs's lost+found is no sandbox's: the root directory is below it.
	return l, nil
}

func (l *loopFS) unmount() { _ = run("umount", "-l", l.dir) }

// fill takes every free block of the file system (a full disk).
func (l *loopFS) fill() error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(l.dir, &st); err != nil {
		return err
	}
	free := int64(st.Bavail) * int64(st.Bsize) //nolint:gosec,unconvert // a loop file system's block count fits; Bsize is int64 on Linux only
	return run("fallocate", "-l", strconv.FormatInt(free, 10), filepath.Join(l.dir, "fill"))
}

func (l *loopFS) drain() { _ = os.Remove(filepath.Join(l.dir, "fill")) }

// sshd is an sshd of the soak's own, so killing it touches no other user.
type sshd struct {
	config, pidFile, log string
}

func startSSHD(work, harness string, port int) (*sshd, error) {
	s := &sshd{config: filepath.Join(work, "sshd_config"), pidFile: filepath.Join(work, "sshd.pid"), log: filepath.Join(work, "sshd.log")}
	sftp := "/usr/lib/openssh/sftp-server"
	cfg := fmt.Sprintf(`ListenAddress 127.0.0.1:%d
HostKey %s
PidFile %s
AuthorizedKeysFile %s .ssh/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
Subsystem sftp %s
`, port, filepath.Join(harness, "ssh_host_ed25519_key_2222"), s.pidFile, filepath.Join(harness, "authorized_keys"), sftp)
	if err := os.WriteFile(s.config, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	return s, s.start(port)
}

func (s *sshd) start(port int) error {
	if err := run("/usr/sbin/sshd", "-f", s.config, "-E", s.log); err != nil {
		return err
	}
	return waitListening(fmt.Sprintf("127.0.0.1:%d", port), 10*time.Second)
}

// kill ends the sshd and every session it serves (SIGKILL).
func (s *sshd) kill() {
	data, err := os.ReadFile(s.pidFile)
	if err != nil {
		return
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if pid <= 0 {
		return
	}
	_ = exec.Command("pkill", "-KILL", "-P", strconv.Itoa(pid)).Run() // its sessions; none is not an error
	_ = syscall.Kill(pid, syscall.SIGKILL)
	_ = os.Remove(s.pidFile)
}

func waitListening(addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens on %s after %s: %w", addr, within, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// toxiproxy is the fault proxy in front of the sshd.
type toxiproxy struct {
	cmd *exec.Cmd
	api string
}

func startToxiproxy(bin string, apiPort, listenPort, upstreamPort int) (*toxiproxy, error) {
	t := &toxiproxy{api: fmt.Sprintf("http://127.0.0.1:%d", apiPort)}
	t.cmd = exec.Command(bin, "-host", "127.0.0.1", "-port", strconv.Itoa(apiPort))
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	if err := waitListening(fmt.Sprintf("127.0.0.1:%d", apiPort), 10*time.Second); err != nil {
		return nil, err
	}
	body := fmt.Sprintf(`{"name":"ssh","listen":"127.0.0.1:%d","upstream":"127.0.0.1:%d","enabled":true}`, listenPort, upstreamPort)
	return t, t.post("/proxies", body)
}

func (t *toxiproxy) post(path, body string) error {
	resp, err := http.Post(t.api+path, "application/json", strings.NewReader(body)) //nolint:gosec,noctx // the soak's own proxy on loopback
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode >= 300 {
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return fmt.Errorf("toxiproxy %s: %s: %s", path, resp.Status, b.String())
	}
	return nil
}

// toxic adds a toxic on both directions.
func (t *toxiproxy) toxic(kind string, attrs map[string]int) error {
	a, _ := json.Marshal(attrs)
	for _, stream := range []string{"upstream", "downstream"} {
		body := fmt.Sprintf(`{"name":"%s_%s","type":"%s","stream":"%s","toxicity":1,"attributes":%s}`, kind, stream, kind, stream, a)
		if err := t.post("/proxies/ssh/toxics", body); err != nil {
			return err
		}
	}
	return nil
}

// heal removes every toxic, and cuts the connections the proxy holds
// (disabling a proxy closes them): one whose data a toxic dropped is
// broken for good.
func (t *toxiproxy) heal() error {
	if err := t.post("/reset", ""); err != nil {
		return err
	}
	if err := t.post("/proxies/ssh", `{"enabled":false}`); err != nil {
		return err
	}
	return t.post("/proxies/ssh", `{"enabled":true}`)
}

func (t *toxiproxy) stop() {
	if t.cmd.Process != nil {
		_ = t.cmd.Process.Kill()
		_ = t.cmd.Wait()
	}
}

// stopOrphanedContainerd ends the containerd a killed dockerd started and
// left running (its parent now pid 1): a new dockerd starts its own and,
// with the old one holding the socket, times out dialling it. The
// containers' shims outlive it, as with a service manager restarting
// both.
func stopOrphanedContainerd() {
	data, err := os.ReadFile("/var/run/docker/containerd/containerd.pid")
	if err != nil {
		return
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if pid <= 0 || err != nil {
		return
	}
	// stat: "pid (comm) state ppid ..."
	fields := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
	if len(fields) < 2 || fields[1] != "1" {
		return // its dockerd lives
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil {
			return
		}
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// dockerd is the harness's engine: killed with SIGKILL, and brought back
// by the harness's own up.sh, as a service manager would.
func killDockerd(harness string) error {
	data, err := os.ReadFile(filepath.Join(harness, "dockerd.pid"))
	if err != nil {
		return err
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return syscall.Kill(pid, syscall.SIGKILL)
}

func restartDockerd(repoRoot, harness string) error {
	// A killed dockerd leaves its pid file, which a new one refuses to
	// start over while that pid exists (a zombie here, where pid 1 may
	// reap late): gone or a zombie, it is stale.
	data, _ := os.ReadFile(filepath.Join(harness, "dockerd.pid"))
	pid := strings.TrimSpace(string(data))
	deadline := time.Now().Add(30 * time.Second)
	for pid != "" && time.Now().Before(deadline) {
		st, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil || strings.Contains(string(st), ") Z ") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = os.Remove("/var/run/docker.pid")
	stopOrphanedContainerd()
	cmd := exec.Command("bash", filepath.Join(repoRoot, "scripts", "harness", "up.sh"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("up.sh: %w\n%s", err, out)
	}
	return nil
}
