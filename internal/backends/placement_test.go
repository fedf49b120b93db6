package backends

import (
	"errors"
	"strings"
	"testing"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// idle is a host with everything free: only sandbox counts tell hosts apart.
func idle(n int) Capacity {
	return Capacity{Sandboxes: n, MemTotalKiB: 8 << 20, MemAvailKiB: 8 << 20, CPUs: 4, DiskFreeKiB: 100 << 20, DiskTotalKiB: 100 << 20}
}

func TestPlacePicksMostHeadroomTiesByName(t *testing.T) {
	cands := []Candidate{
		{Host: "c", Capacity: idle(0)},
		{Host: "b", Capacity: idle(0)},
		{Host: "a", Capacity: idle(1)},
	}
	p, err := Place(cands, PoolRule{Pool: "ci"})
	if err != nil || p.Host != "b" || len(p.Skipped) != 0 {
		t.Fatalf("Place = %+v, %v; want b (tied with c, first by name; a holds one)", p, err)
	}
	// Memory and load count too: with b's CPUs busy and c short of
	// memory, a (one sandbox, otherwise idle) has the most headroom.
	cands[1].Capacity.Load1 = 4
	cands[0].Capacity.MemAvailKiB = 1 << 20
	if p, _ := Place(cands, PoolRule{Pool: "ci"}); p.Host != "a" {
		t.Errorf("with b's CPUs busy and c short of memory, Place = %+v; want a", p)
	}
}

// What one run places is counted: six sandboxes over three hosts of
// different sizes spread by free slots, then the pool is full.
func TestPlaceSpreadsWhatOneRunPlaces(t *testing.T) {
	cands := []Candidate{
		{Host: "small", MaxSandboxes: 1, Capacity: idle(0)},
		{Host: "medium", MaxSandboxes: 2, Capacity: idle(0)},
		{Host: "large", MaxSandboxes: 4, Capacity: idle(1)},
	}
	got := map[string]int{}
	for range 6 {
		p, err := Place(cands, PoolRule{Pool: "ci"})
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		got[p.Host]++
		for i := range cands {
			if cands[i].Host == p.Host {
				cands[i].Placed++
			}
		}
	}
	if got["small"] != 1 || got["medium"] != 2 || got["large"] != 3 {
		t.Fatalf("six sandboxes placed %v; want small 1, medium 2, large 3 (each host filled to its maximum)", got)
	}
	_, err := Place(cands, PoolRule{Pool: "ci"})
	var full *FullPoolError
	if !errors.As(err, &full) {
		t.Fatalf("a seventh: %v, want a full pool", err)
	}
	for _, want := range []string{`pool "ci"`, "large: full: 4 of 4 sandboxes", "medium: full: 2 of 2 sandboxes", "small: full: 1 of 1 sandboxes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("full pool error %q does not say %q", err, want)
		}
	}
}

func TestPlaceSkipsAndSaysWhy(t *testing.T) {
	low := idle(0)
	low.MemAvailKiB = 100 << 10 // 100 MB
	cands := []Candidate{
		{Host: "down", Err: errors.New("dial tcp: connection refused")},
		{Host: "gpu", Labels: map[string]string{"gpu": "true"}, Capacity: idle(3)},
		{Host: "plain", Capacity: idle(0)},
		{Host: "tight", Capacity: low, Labels: map[string]string{"gpu": "true"}},
	}
	p, err := Place(cands, PoolRule{Pool: "ci", MinFreeMemoryMB: 512, Labels: map[string]string{"gpu": "true"}})
	if err != nil || p.Host != "gpu" {
		t.Fatalf("Place = %+v, %v; want gpu (the only one with the label and memory)", p, err)
	}
	want := []string{"down: unreachable (dial tcp: connection refused)", "plain: 0 sandboxes; labels do not match (gpu=true)",
		"tight: 0 sandboxes; 100 MB of memory available, below the pool's floor of 512 MB"}
	if len(p.Skipped) != len(want) {
		t.Fatalf("skipped %+v, want %d", p.Skipped, len(want))
	}
	for i, s := range p.Skipped {
		if got := s.Host + ": " + s.Reason; got != want[i] {
			t.Errorf("skip %d: %q, want %q", i, got, want[i])
		}
	}
	// Unreachable hosts only: no placement, and the error says so.
	if _, err := Place(cands[:1], PoolRule{Pool: "ci"}); err == nil || !strings.Contains(err.Error(), "down: unreachable") {
		t.Errorf("a pool of an unreachable host: %v", err)
	}
}

func TestParseCapacity(t *testing.T) {
	out := "sandboxes 3\nmemtotal 24576000\nmemavail 20000000\nload 0.52\ncpus 2\ndir /root\ndisk 1000 4000\n"
	c, err := parseCapacity(out)
	if err != nil {
		t.Fatal(err)
	}
	if c.Sandboxes != 3 || c.MemTotalKiB != 24576000 || c.MemAvailKiB != 20000000 || c.Load1 != 0.52 || c.CPUs != 2 ||
		c.DiskFreeKiB != 1000 || c.DiskTotalKiB != 4000 || c.ReadFromRootOf != "/root" {
		t.Errorf("parseCapacity = %+v", c)
	}
	if _, err := parseCapacity("sandboxes 1\n"); err == nil {
		t.Error("a report without memory, load and disk was accepted")
	}
	if _, err := parseCapacity(strings.Replace(out, "load 0.52", "load x", 1)); err == nil {
		t.Error("an unreadable load was accepted")
	}
}

// ReadCapacity against this machine, through the local transport: a root
// directory that does not exist yet is measured at its nearest parent.
func TestReadCapacityLocal(t *testing.T) {
	dir := t.TempDir()
	h := &hosts.Host{Transport: &hosts.Local{Name: "local"}, RootDir: dir + "/not/yet", Local: true}
	c, err := ReadCapacity(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	if c.Sandboxes != 0 || c.MemTotalKiB <= 0 || c.MemAvailKiB <= 0 || c.CPUs <= 0 || c.DiskTotalKiB <= 0 || c.ReadFromRootOf != dir {
		t.Errorf("ReadCapacity = %+v", c)
	}
}
