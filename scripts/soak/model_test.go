//go:build linux

package main

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// A seed replays its run: the same operations, configurations and faults.
func TestScheduleReplaysFromItsSeed(t *testing.T) {
	run := func(seed uint64) string {
		rng := rand.New(rand.NewPCG(seed, seed^0x5eed)) //nolint:gosec // a replayable schedule
		s := &soak{rng: rng}
		slots := make([]slot, 3)
		var b strings.Builder
		for gen := 1; gen <= 40; gen++ {
			b.WriteString(mutate(rng, slots, gen) + " ")
			st := s.draw()
			b.WriteString(st.fault + " " + st.delay.String() + "\n")
			b.WriteString(config("", "/repo", slots))
		}
		return b.String()
	}
	a, b, c := run(7), run(7), run(8)
	if a != b {
		t.Fatal("one seed gave two schedules")
	}
	if a == c {
		t.Fatal("two seeds gave one schedule")
	}
	for _, want := range []string{opCreate, "sandboxer_snapshot", "sandboxer_restore", "sandboxer_command", `desired_state = "stopped"`} {
		if !strings.Contains(a, want) {
			t.Errorf("40 rounds never had %q", want)
		}
	}
}
