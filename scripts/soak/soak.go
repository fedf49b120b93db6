//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Ports of the soak's own sshd, proxy and proxy API (loopback only).
const (
	sshdPort  = 2291
	proxyPort = 2292
	apiPort   = 8479
)

// Fault kinds, as the report counts them.
const (
	faultNone      = "none"
	faultReset     = "ssh-reset"
	faultBlackhole = "ssh-blackhole"
	faultLatency   = "ssh-latency-spike"
	faultBandwidth = "ssh-bandwidth"
	faultSlicer    = "ssh-sliced"
	faultSSHD      = "sshd-killed"
	faultDockerd   = "dockerd-killed"
	faultTerraform = "terraform-killed"
	faultDiskFull  = "disk-full"
)

var faultKinds = []string{faultNone, faultNone, faultReset, faultBlackhole, faultLatency, faultBandwidth, faultSlicer,
	faultSSHD, faultDockerd, faultTerraform, faultDiskFull}

// The invariants, in the order the report prints them.
var invariants = []string{
	"plan empty after apply converges",
	"sandboxes in state missing on the host (ghosts)",
	"sandboxes on the host missing from state (orphans)",
	"containers, networks, volumes or workspaces left of destroyed sandboxes",
	"snapshots in state that do not verify",
	"provider-started processes left on the host",
	"resources reported created missing from state",
}

type soak struct {
	o       options
	rng     *rand.Rand
	dir     string // the Terraform working directory
	repo    string
	fs      *loopFS
	root    string // the host's root directory, on fs
	sshd    *sshd
	proxy   *toxiproxy
	slots   []slot
	created map[string]string // address -> id last reported created
	// address -> id whose destroy started and has not been reported done:
	// when its answer is lost, the next refresh finds it gone (drift).
	destroying map[string]string
	rounds     int
	ops        counts
	faults     counts // drawn
	struck     counts // struck while the apply ran
	fails      counts
	viol       map[string][]string
	closing    sync.Once
}

func newSoak(o options) (*soak, error) {
	s := &soak{o: o, rng: rand.New(rand.NewPCG(o.seed, o.seed^0x5eed)), //nolint:gosec // a replayable schedule, not a secret
		slots:   make([]slot, o.slots),
		created: map[string]string{}, destroying: map[string]string{}, ops: counts{}, faults: counts{}, struck: counts{}, fails: counts{}, viol: map[string][]string{}}
	s.dir = filepath.Join(o.work, "tf")
	s.repo = filepath.Join(o.work, "repo")
	for _, d := range []string{s.dir, s.repo} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	compose := fmt.Sprintf(`services:
  db:
    image: %s
    volumes: ["data:/var/lib/postgresql"]
    healthcheck:
      test: ["CMD", "pg_isready", "-h", "127.0.0.1", "-U", "postgres"]
      interval: 1s
      retries: 120
volumes:
  data: {}
`, o.image)
	if err := os.WriteFile(filepath.Join(s.repo, "compose.yaml"), []byte(compose), 0o644); err != nil {
		return nil, err
	}
	var err error
	if s.fs, err = mountLoop(o.work, "768M"); err != nil {
		return nil, err
	}
	s.root = filepath.Join(s.fs.dir, "sandboxer")
	if s.sshd, err = startSSHD(o.work, o.harness, sshdPort); err != nil {
		s.close()
		return nil, err
	}
	if s.proxy, err = startToxiproxy(o.toxiproxy, apiPort, proxyPort, sshdPort); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *soak) close() { s.closing.Do(s.closeParts) }

func (s *soak) closeParts() {
	if s.proxy != nil {
		s.proxy.stop()
	}
	if s.sshd != nil {
		s.sshd.kill()
	}
	if s.fs != nil {
		s.fs.unmount()
	}
}

// provider is the provider block: the soak's sshd through the proxy, with
// the host's policy and limits of a shared CI host.
func (s *soak) provider() string {
	key, _ := os.ReadFile(filepath.Join(s.o.harness, "host_key_2222.pub"))
	return fmt.Sprintf(`terraform {
  required_providers {
    sandboxer = { source = "sand-boxer/sandboxer" }
  }
}

provider "sandboxer" {
  host {
    name             = "soak"
    address          = "127.0.0.1:%d"
    user             = "root"
    private_key_file = %q
    host_key         = %q
    root_dir         = %q
    policy           = "baseline"
    default_limits   = { memory = "512m", pids = 512 }
  }
}
`, proxyPort, filepath.Join(s.o.harness, "client_ed25519"), strings.TrimSpace(string(key)), s.root)
}

func (s *soak) run(d time.Duration) {
	s.warm()
	end := time.Now().Add(d)
	for gen := 1; time.Now().Before(end); gen++ {
		s.round(gen)
	}
	// The end: everything destroyed, and nothing left.
	for i := range s.slots {
		s.slots[i] = slot{}
	}
	s.ops["destroy-all"]++
	s.write()
	s.converge("final")
	s.reap()
	s.check("final")
}

// warm installs the checkpoint agent on the host (tens of megabytes, once
// per host) with a snapshot of a sandbox made and destroyed before the
// faults start: on a link a fault slows to kilobytes a second, that first
// upload alone would outlast the run. (An upload over a slow link is
// TestSlowLinkIsNotTakenForDead's.)
func (s *soak) warm() {
	slots := []slot{{present: true, snap: 1}}
	_ = os.WriteFile(filepath.Join(s.dir, "main.tf"), []byte(config(s.provider(), s.repo, slots)), 0o600)
	rc, out := s.terraform([]string{"apply", "-auto-approve", "-json", "-input=false"}, nil)
	s.record(out)
	if rc != 0 {
		fmt.Printf("soak: warming up failed: %s\n", firstErrors(out))
	}
	s.write() // no slot: the warm-up's sandbox is destroyed by the first round
}

// round changes the configuration, applies it under a fault, heals, and
// checks that apply and plan converge with every invariant holding.
func (s *soak) round(gen int) {
	s.rounds++
	for range 1 + s.rng.IntN(2) {
		s.ops[mutate(s.rng, s.slots, gen)]++
	}
	st := s.draw()
	s.faults[st.fault]++
	s.write()
	fmt.Printf("soak: round %d: fault %s after %s\n", s.rounds, st.fault, st.delay)
	rc := s.apply(st)
	s.heal(st.fault)
	if rc != 0 {
		s.fails["apply under "+st.fault]++
	}
	s.converge(fmt.Sprintf("round %d", s.rounds))
	s.check(fmt.Sprintf("round %d", s.rounds))
}

func (s *soak) write() {
	_ = os.WriteFile(filepath.Join(s.dir, "main.tf"), []byte(config(s.provider(), s.repo, s.slots)), 0o600)
}

// terraform runs the CLI in the working directory, in a process group of
// its own; started says it is running (for a kill).
func (s *soak) terraform(args []string, started func(*exec.Cmd)) (int, []byte) {
	cmd := exec.Command(s.o.terraform, args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+s.o.cliConfig, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return -1, []byte(err.Error())
	}
	if started != nil {
		started(cmd)
	}
	err := cmd.Wait()
	s.log(args, out.Bytes())
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), out.Bytes()
	}
	if err != nil {
		return -1, out.Bytes()
	}
	return 0, out.Bytes()
}

// log appends a Terraform run's output to the run's log, if it keeps one:
// what a violation's sandbox went through is there, round by round.
func (s *soak) log(args []string, out []byte) {
	if s.o.log == "" {
		return
	}
	f, err := os.OpenFile(s.o.log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	// A log that cannot be written loses a replay aid, not the run.
	_, _ = fmt.Fprintf(f, "=== round %d %s: terraform %s\n%s\n", s.rounds, time.Now().UTC().Format(time.RFC3339Nano), strings.Join(args, " "), out)
	_ = f.Close()
}

// strike is a fault and what it needs, drawn before the apply runs, so
// that a seed replays the same schedule.
type strike struct {
	fault string
	delay time.Duration
	n     int           // the toxic's parameter
	grace time.Duration // between a Terraform interrupt and its kill
}

func (s *soak) draw() strike {
	return strike{
		fault: faultKinds[s.rng.IntN(len(faultKinds))],
		delay: time.Duration(s.rng.IntN(4000)) * time.Millisecond,
		n:     s.rng.IntN(1000),
		grace: time.Duration(s.rng.IntN(6000)) * time.Millisecond,
	}
}

// apply applies the configuration while the fault strikes after its
// delay, if the apply still runs then.
func (s *soak) apply(st strike) int {
	var mu sync.Mutex
	done := false
	hit := func(cmd *exec.Cmd) {
		var err error
		switch st.fault {
		case faultReset:
			err = s.proxy.toxic("reset_peer", map[string]int{"timeout": 200 + 2*st.n})
		case faultBlackhole:
			// Until the apply ends: the provider's keepalives give up on
			// the connection, and its commands fail within their timeouts.
			err = s.proxy.toxic("timeout", map[string]int{"timeout": 0})
		case faultLatency:
			err = s.proxy.toxic("latency", map[string]int{"latency": 200 + st.n, "jitter": 100})
		case faultBandwidth:
			err = s.proxy.toxic("bandwidth", map[string]int{"rate": 16 + st.n/10})
		case faultSlicer:
			err = s.proxy.toxic("slicer", map[string]int{"average_size": 16, "size_variation": 12, "delay": 200})
		case faultSSHD:
			s.sshd.kill()
		case faultDockerd:
			err = killDockerd(s.o.harness)
		case faultTerraform:
			// As a CI runner cancels a job: an interrupt, then SIGKILL to
			// the whole group after a grace (at times too short for any
			// cleanup).
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
			time.AfterFunc(st.grace, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
		case faultDiskFull:
			err = s.fs.fill()
		}
		if err != nil {
			fmt.Printf("soak: fault %s not struck: %v\n", st.fault, err)
		}
	}
	var timer *time.Timer
	rc, out := s.terraform([]string{"apply", "-auto-approve", "-json", "-input=false"}, func(cmd *exec.Cmd) {
		timer = time.AfterFunc(st.delay, func() {
			mu.Lock()
			defer mu.Unlock()
			if !done {
				s.struck[st.fault]++
				hit(cmd)
			}
		})
	})
	mu.Lock()
	done = true
	mu.Unlock()
	if timer != nil {
		timer.Stop()
	}
	s.record(out)
	return rc
}

// heal ends the fault: the proxy clean, sshd and dockerd running, the disk
// drained.
func (s *soak) heal(fault string) {
	if err := s.proxy.heal(); err != nil {
		fmt.Println("soak: healing the proxy:", err)
	}
	if fault == faultSSHD {
		if err := s.sshd.start(sshdPort); err != nil {
			fmt.Println("soak: restarting sshd:", err)
		}
	}
	if fault == faultDockerd {
		if err := restartDockerd(s.o.repoRoot, s.o.harness); err != nil {
			fmt.Println("soak: restarting dockerd:", err)
		}
	}
	s.fs.drain()
}

// converge applies with every fault healed, up to three times, and then
// requires an empty plan.
func (s *soak) converge(when string) {
	rc := 1
	var out []byte
	for attempt := 1; attempt <= 3 && rc != 0; attempt++ {
		rc, out = s.terraform([]string{"apply", "-auto-approve", "-json", "-input=false"}, nil)
		s.record(out)
		if rc != 0 {
			s.fails["converging apply"]++
			fmt.Printf("soak: %s: converging apply %d failed: %s\n", when, attempt, firstErrors(out))
		}
	}
	rc, out = s.terraform([]string{"plan", "-detailed-exitcode", "-input=false", "-no-color"}, nil)
	if rc != 0 {
		s.violate(invariants[0], fmt.Sprintf("%s: plan exited %d: %s", when, rc, tail(out, 1500)))
	}
}

// record reads an apply's -json stream: what it reported created and
// destroyed, and its errors by summary.
func (s *soak) record(out []byte) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m struct {
			Type string `json:"type"`
			Hook struct {
				Resource struct {
					Addr string `json:"addr"`
				} `json:"resource"`
				Action  string `json:"action"`
				IDValue string `json:"id_value"`
			} `json:"hook"`
			Change struct {
				Resource struct {
					Addr string `json:"addr"`
				} `json:"resource"`
				Action string `json:"action"`
			} `json:"change"`
			Diagnostic struct {
				Severity string `json:"severity"`
				Summary  string `json:"summary"`
			} `json:"diagnostic"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		switch {
		case m.Type == "apply_complete" && m.Hook.Action == "create":
			s.created[m.Hook.Resource.Addr] = m.Hook.IDValue
		case m.Type == "apply_start" && m.Hook.Action == "delete":
			s.destroying[m.Hook.Resource.Addr] = m.Hook.IDValue
		case m.Type == "apply_complete" && m.Hook.Action == "delete":
			delete(s.created, m.Hook.Resource.Addr)
			delete(s.destroying, m.Hook.Resource.Addr)
		case m.Type == "resource_drift" && m.Change.Action == "delete":
			// A destroy that was done on the host, though its answer was
			// lost; any other resource found gone stays a violation.
			addr := m.Change.Resource.Addr
			if id, ok := s.destroying[addr]; ok && s.created[addr] == id {
				delete(s.created, addr)
			}
			delete(s.destroying, addr)
		case m.Type == "diagnostic" && m.Diagnostic.Severity == "error":
			s.fails["error: "+m.Diagnostic.Summary]++
		}
	}
}

func (s *soak) violate(invariant, detail string) {
	s.viol[invariant] = append(s.viol[invariant], detail)
	fmt.Printf("soak: VIOLATION %s: %s\n", invariant, detail)
}

func (s *soak) violations() int {
	n := 0
	for _, v := range s.viol {
		n += len(v)
	}
	return n
}

func (s *soak) report(w io.Writer) {
	var b strings.Builder
	fmt.Fprintf(&b, "\nsoak: seed %d, %d rounds\n", s.o.seed, s.rounds)
	fmt.Fprintf(&b, "%-28s %s\n", "operations", s.ops)
	fmt.Fprintf(&b, "%-28s %s\n", "faults drawn", s.faults)
	fmt.Fprintf(&b, "%-28s %s\n", "faults struck mid-apply", s.struck)
	fmt.Fprintf(&b, "%-28s %s\n", "failures (healed after)", s.fails)
	for _, inv := range invariants {
		fmt.Fprintf(&b, "%-76s %d violations\n", inv, len(s.viol[inv]))
	}
	_, _ = io.WriteString(w, b.String()) // stdout: nothing to do if it fails
}

func firstErrors(out []byte) string {
	var errs []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, `"severity":"error"`) {
			errs = append(errs, line)
		}
	}
	return tail([]byte(strings.Join(errs, "\n")), 1500)
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
