package testharness

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// Swarm is the three-node Docker Swarm scripts/harness/swarm.sh stands up:
// three engines, each in a network namespace of its own, a manager and two
// workers, and an sshd on the manager's address whose sessions talk to the
// manager's engine.
type Swarm struct {
	t testing.TB
	// SSHAddr is the manager's sshd; KnownHosts pins its key.
	SSHAddr, KnownHosts string
	// Nodes are the DOCKER_HOST values of the nodes' engines, the manager
	// first: what a test asks each node directly.
	Nodes []string

	stopped map[int]bool // nodes this test stopped
}

// StartedSwarm is the harness swarm, skipping (or failing under CI) the
// test when swarm.sh has not stood it up.
func StartedSwarm(t testing.TB) *Swarm {
	t.Helper()
	Share(t)
	s := &Swarm{t: t, stopped: map[int]bool{},
		SSHAddr:    Env(t, "SANDBOXER_TEST_SWARM_SSH_ADDR"),
		KnownHosts: Env(t, "SANDBOXER_TEST_SWARM_KNOWN_HOSTS"),
		Nodes:      strings.Fields(Env(t, "SANDBOXER_TEST_SWARM_NODE_HOSTS")),
	}
	if len(s.Nodes) != 3 {
		t.Fatalf("SANDBOXER_TEST_SWARM_NODE_HOSTS names %d engines, want 3: run scripts/harness/swarm.sh up", len(s.Nodes))
	}
	return s
}

// Host is the manager as a host (over its sshd, as root) with a fresh
// root directory.
func (s *Swarm) Host() *hosts.Host {
	s.t.Helper()
	key, err := os.ReadFile(Env(s.t, "SANDBOXER_TEST_SSH_KEY"))
	if err != nil {
		s.t.Fatal(err)
	}
	tr, err := hosts.NewSSH(hosts.SSHConfig{Name: "swarm", Address: s.SSHAddr, User: Env(s.t, "SANDBOXER_TEST_SSH_USER"),
		PrivateKey: key, KnownHostsFile: s.KnownHosts})
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { _ = tr.Close() }) // best effort: the test is over
	return &hosts.Host{Transport: tr, RootDir: s.t.TempDir()}
}

// Docker runs the docker CLI against node n (1-based) and returns its output.
func (s *Swarm) Docker(n int, args ...string) (string, error) {
	out, err := exec.Command("docker", append([]string{"-H", s.Nodes[n-1]}, args...)...).CombinedOutput()
	return string(out), err
}

// NodeStop stops node n's engine (a node lost); NodeStart starts it again
// and returns once the manager sees it ready. Both go through swarm.sh,
// which knows how the engines run.
// A node a test stopped is started again when the test ends, whatever
// happened: the next test finds the swarm whole.
func (s *Swarm) NodeStop(n int) {
	s.t.Helper()
	s.t.Cleanup(func() {
		if s.stopped[n] {
			s.NodeStart(n)
		}
	})
	s.stopped[n] = true
	s.script("node-stop", n)
}

func (s *Swarm) NodeStart(n int) {
	s.t.Helper()
	s.script("node-start", n)
	delete(s.stopped, n)
}

func (s *Swarm) script(cmd string, n int) {
	s.t.Helper()
	_, here, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(here), "..", "..", "scripts", "harness", "swarm.sh")
	if out, err := exec.Command("bash", script, cmd, strconv.Itoa(n)).CombinedOutput(); err != nil {
		s.t.Fatalf("swarm.sh %s %d: %v\n%s", cmd, n, err, out)
	}
}
