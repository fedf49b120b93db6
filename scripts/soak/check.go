//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// stateResource is a resource of `terraform show -json`.
type stateResource struct {
	Address string         `json:"address"`
	Type    string         `json:"type"`
	Values  map[string]any `json:"values"`
}

func (r stateResource) str(key string) string {
	v, _ := r.Values[key].(string)
	return v
}

// state reads the resources Terraform holds.
func (s *soak) state() ([]stateResource, error) {
	rc, out := s.terraform([]string{"show", "-json"}, nil)
	if rc != 0 {
		return nil, fmt.Errorf("terraform show: %s", tail(out, 500))
	}
	var doc struct {
		Values struct {
			RootModule struct {
				Resources []stateResource `json:"resources"`
			} `json:"root_module"`
		} `json:"values"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return nil, err
	}
	return doc.Values.RootModule.Resources, nil
}

// seen are the sandbox ids this run ever had, in state or on the host:
// what of the shared engine is the soak's.
var seen = map[string]bool{}

// check holds every invariant against the state and the host.
func (s *soak) check(when string) {
	resources, err := s.state()
	if err != nil {
		s.violate(invariants[0], when+": "+err.Error())
		return
	}
	inState := map[string]bool{}
	addrs := map[string]string{}
	var snapshots []string
	for _, r := range resources {
		addrs[r.Address] = r.str("id")
		switch r.Type {
		case "sandboxer_sandbox":
			inState[r.str("id")] = true
		case "sandboxer_restore":
			if id := r.str("sandbox_id"); id != "" {
				inState[id] = true
			}
		case "sandboxer_snapshot":
			snapshots = append(snapshots, r.str("id"))
		}
	}
	// The host's reaper, as its cron line runs it every minute: what a
	// killed Terraform left unfinished goes once its deadline has passed.
	s.reapNow()
	records := s.records()
	for id := range inState {
		seen[id] = true
		if !records[id] {
			s.violate(invariants[1], fmt.Sprintf("%s: sandbox %s is in state, with no record on the host", when, id))
		}
	}
	for id := range records {
		seen[id] = true
		if _, pending := s.inFlight(id); pending && !inState[id] {
			continue // the reaper's, once its deadline passes (reap)
		}
		if !inState[id] {
			s.violate(invariants[2], fmt.Sprintf("%s: sandbox %s is on the host, not in state", when, id))
		}
	}
	for _, left := range s.leftovers(records) {
		s.violate(invariants[3], when+": "+left)
	}
	store, err := checkpoint.Open(filepath.Join(s.root, ".sandboxer", "store"))
	for _, id := range snapshots {
		var m *checkpoint.Manifest
		if err == nil {
			m, err = store.Load(id)
		}
		if err == nil {
			err = store.Verify(m, 2)
		}
		if err != nil {
			s.violate(invariants[4], fmt.Sprintf("%s: snapshot %s: %v", when, id, err))
			err = nil
		}
	}
	for _, p := range s.processes() {
		s.violate(invariants[5], when+": "+p)
	}
	for addr, id := range s.created {
		if got, ok := addrs[addr]; !ok || got != id {
			s.violate(invariants[6], fmt.Sprintf("%s: %s was reported created as %s; state has %q", when, addr, id, got))
		}
	}
}

// records are the ids of the sandbox records on the host.
func (s *soak) records() map[string]bool {
	found, _ := filepath.Glob(filepath.Join(s.root, ".sandboxer", "sandboxes", "*.json")) // the pattern is valid
	ids := map[string]bool{}
	for _, f := range found {
		ids[strings.TrimSuffix(filepath.Base(f), ".json")] = true
	}
	return ids
}

// inFlight reports whether sandbox id's record is of a create that has not
// finished and whose deadline has not passed: the host cannot tell a
// create whose Terraform was killed from one still running, and the
// reaper removes it once its deadline passes (backends/reaper.sh).
func (s *soak) inFlight(id string) (time.Time, bool) {
	data, err := os.ReadFile(filepath.Join(s.root, ".sandboxer", "sandboxes", id+".json"))
	if err != nil {
		return time.Time{}, false
	}
	var r struct {
		ReadyAt        *time.Time `json:"ready_at"`
		CreateDeadline *time.Time `json:"create_deadline"`
	}
	if json.Unmarshal(data, &r) != nil || r.ReadyAt != nil || r.CreateDeadline == nil {
		return time.Time{}, false
	}
	return *r.CreateDeadline, time.Now().Before(*r.CreateDeadline)
}

// reap waits for the deadlines of the creates still in flight and runs the
// host's reaper: what a killed Terraform left unfinished is then gone.
func (s *soak) reap() {
	var last time.Time
	for id := range s.records() {
		if deadline, ok := s.inFlight(id); ok && deadline.After(last) {
			last = deadline
		}
	}
	if wait := time.Until(last); wait > 0 {
		fmt.Printf("soak: waiting %s for abandoned creates' deadlines\n", wait.Round(time.Second))
		time.Sleep(wait + time.Second)
	}
	s.reapNow()
}

// reapNow runs the host's reaper once.
func (s *soak) reapNow() {
	h := &hosts.Host{Transport: &hosts.Local{Name: "soak"}, RootDir: s.root, Local: true}
	ids, err := backends.NewRegistry().Reap(context.Background(), h)
	if err != nil {
		fmt.Println("soak: the reaper failed:", err)
	}
	if len(ids) > 0 {
		s.ops["reaped"] += len(ids)
	}
}

// leftovers are the workspaces under the root directory, and the compose
// containers, networks and volumes, of sandboxes this run had (seen in
// state or a record, or a container's directory under the root) that no
// record names any more.
func (s *soak) leftovers(records map[string]bool) []string {
	var left []string
	ours := map[string]bool{}        // containers first: their directory says whose they are
	entries, _ := os.ReadDir(s.root) // a root not made yet holds nothing
	for _, e := range entries {
		if e.Name() == ".sandboxer" {
			continue
		}
		if id := strings.TrimPrefix(e.Name(), "sbx-"); !records[id] {
			left = append(left, "workspace "+e.Name())
		}
	}
	for _, kind := range []string{"container", "network", "volume"} {
		args := []string{kind, "ls", "-q", "--filter", "label=com.docker.compose.project"}
		if kind == "container" {
			args = []string{"ps", "-aq", "--filter", "label=com.docker.compose.project"}
		}
		out, err := exec.Command("docker", args...).Output()
		if err != nil {
			left = append(left, fmt.Sprintf("(docker %s ls failed: %v)", kind, err))
			continue
		}
		// A container's labels are under .Config, a network's or a volume's
		// at the top; only a container has a directory.
		format := `{{index .Labels "com.docker.compose.project"}}|`
		if kind == "container" {
			format = `{{index .Config.Labels "com.docker.compose.project"}}|{{index .Config.Labels "com.docker.compose.project.working_dir"}}`
		}
		for _, obj := range strings.Fields(string(out)) {
			label, err := exec.Command("docker", kind, "inspect", "-f", format, obj).CombinedOutput()
			if err != nil {
				if !strings.Contains(strings.ToLower(string(label)), "no such") {
					left = append(left, fmt.Sprintf("(docker %s inspect %s failed: %v: %s)", kind, obj, err, strings.TrimSpace(string(label))))
				}
				continue // gone meanwhile
			}
			project, dir, _ := strings.Cut(strings.TrimSpace(strings.ReplaceAll(string(label), "<no value>", "")), "|")
			id := strings.TrimPrefix(project, "sbx-")
			// Under the root directory, it is this run's even when the soak
			// never saw its sandbox (a create cut off before its state or a
			// check): nothing may outlive its record.
			if strings.HasPrefix(dir, s.root+"/") {
				ours[id] = true
			}
			if (seen[id] || ours[id]) && !records[id] {
				left = append(left, fmt.Sprintf("%s %s of sandbox %s", kind, obj, id))
			}
		}
	}
	return left
}

// processes are those left of the provider on the host once Terraform
// has exited: agents under the root directory, provider processes, and
// the shells' loops of sessions of the soak's sshd (their SSH_CONNECTION
// names its port; other sshd's sessions, a test's, are not the soak's).
func (s *soak) processes() []string {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline") // the pattern is valid
	var found []string
	ours := fmt.Sprintf(" 127.0.0.1 %d\x00", sshdPort)
	for _, p := range procs {
		data, err := os.ReadFile(p)
		if err != nil || len(data) == 0 {
			continue
		}
		argv := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
		cmd := strings.Join(argv, " ")
		left := strings.Contains(cmd, s.root+"/") || filepath.Base(argv[0]) == "terraform-provider-sandboxer"
		if !left && strings.Contains(cmd, "sandboxer-shell-v2") {
			env, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "environ"))
			left = strings.Contains(string(env), ours)
		}
		if left {
			found = append(found, fmt.Sprintf("process %s: %.120s", filepath.Base(filepath.Dir(p)), cmd))
		}
	}
	return found
}
