package composefile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// A service without limits gets the host's defaults (else its maximums)
// in keys both compose versions apply, or under deploy for a swarm stack;
// one with its own keeps them; one above the maximum is refused.
func TestLimitsRendered(t *testing.T) {
	l, repo := loadRepo(t, map[string]string{"compose.yaml": `services:
  plain:
    image: busybox
  own:
    image: busybox
    mem_limit: 64m
    deploy: {replicas: 2}
  greedy:
    image: busybox
    mem_limit: 8g
    cpus: 4
    pids_limit: 100000
`})
	r := Rules{Default: Limits{Memory: 256 << 20, CPUs: 0.5}, Max: Limits{Memory: 1 << 30, CPUs: 2, Pids: 1024}}
	got := messages(l.CheckLimits(r))
	for _, want := range []string{`service "greedy": memory limit 8GiB is above the host's max_limits.memory 1GiB`,
		`service "greedy": cpus 4 is above`, `service "greedy": pids limit 100000 is above`} {
		if !strings.Contains(got, want) {
			t.Errorf("no finding %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, `"own"`) || strings.Contains(got, `"plain"`) {
		t.Errorf("refused a service within the maximums:\n%s", got)
	}
	limits := l.ServiceLimits(r)
	if want := (Limits{Memory: 256 << 20, CPUs: 0.5, Pids: 1024}); limits["plain"] != want {
		t.Errorf("plain runs with %+v, want %+v", limits["plain"], want)
	}
	if want := (Limits{Memory: 64 << 20, CPUs: 0.5, Pids: 1024}); limits["own"] != want {
		t.Errorf("own runs with %+v, want %+v", limits["own"], want)
	}
	total := l.Total(r)
	if want := int64(256<<20 + 2*64<<20 + 8<<30); total.Memory != want {
		t.Errorf("total memory %d, want %d", total.Memory, want)
	}

	out, err := l.Isolate(IsolateOptions{Project: "sbx-abc", Rules: r})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]map[string]any `yaml:"services"`
	}
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	plain := doc.Services["plain"]
	if plain["mem_limit"] != 268435456 || plain["cpus"] != 0.5 || plain["pids_limit"] != 1024 {
		t.Errorf("plain is rendered %v", plain)
	}
	if own := doc.Services["own"]; own["mem_limit"] != "64m" || own["cpus"] != 0.5 {
		t.Errorf("own is rendered %v", own)
	}
	if err := os.WriteFile(filepath.Join(repo, ".rendered.yaml"), out, 0o600); err != nil {
		t.Fatal(err)
	}
	composeAccepts(t, repo, ".rendered.yaml")

	out, err = l.Isolate(IsolateOptions{Project: "sbx-abc", Rules: r, DeployLimits: true})
	if err != nil {
		t.Fatal(err)
	}
	var swarm struct {
		Services map[string]struct {
			MemLimit any `yaml:"mem_limit"`
			Deploy   struct {
				Replicas  int `yaml:"replicas"`
				Resources struct {
					Limits map[string]any `yaml:"limits"`
				} `yaml:"resources"`
			} `yaml:"deploy"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(out, &swarm); err != nil {
		t.Fatal(err)
	}
	if p := swarm.Services["plain"]; p.MemLimit != nil || p.Deploy.Resources.Limits["memory"] != "268435456" || p.Deploy.Resources.Limits["cpus"] != "0.5" || p.Deploy.Resources.Limits["pids"] != 1024 {
		t.Errorf("a swarm rendering does not carry the limits under deploy:\n%s", out)
	}
	if o := swarm.Services["own"]; o.Deploy.Replicas != 2 || o.Deploy.Resources.Limits["memory"] != nil {
		t.Errorf("a swarm rendering lost the service's own deploy or overrode its limit:\n%s", out)
	}
}
