//go:build linux

package main

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
)

// slot is one sandbox of the configuration and what hangs off it. A
// generation above zero says the resource exists; a new generation
// replaces it (a new snapshot, another restore, another command).
type slot struct {
	present bool
	stopped bool
	snap    int // sandboxer_snapshot of it
	restore int // sandboxer_restore of that snapshot into it, in place
	copy    int // sandboxer_restore of that snapshot into a new sandbox
	exec    int // sandboxer_command in its database service
}

// Operation kinds, as the report counts them.
const (
	opCreate         = "create"
	opDestroy        = "destroy"
	opStop           = "stop"
	opStart          = "start"
	opSnapshot       = "snapshot"
	opDeleteSnapshot = "delete-snapshot"
	opRestoreInPlace = "restore-in-place"
	opRestoreNew     = "restore-new"
	opExec           = "exec"
	opRefresh        = "refresh"
)

// mutate applies one random operation the model allows, and names it.
func mutate(rng *rand.Rand, slots []slot, gen int) string {
	i := rng.IntN(len(slots))
	s := &slots[i]
	if !s.present {
		*s = slot{present: true}
		return opCreate
	}
	switch k := rng.IntN(10); {
	case k == 0:
		*s = slot{}
		return opDestroy
	case k == 1 && !s.stopped:
		s.stopped, s.exec = true, 0
		return opStop
	case k == 1:
		s.stopped = false
		return opStart
	case k == 2 || k == 3:
		s.snap = gen
		s.restore = 0
		return opSnapshot
	case k == 4 && s.snap > 0:
		s.snap, s.restore, s.copy = 0, 0, 0
		return opDeleteSnapshot
	case k == 5 && s.snap > 0:
		s.restore = gen
		return opRestoreInPlace
	case k == 6 && s.snap > 0:
		if s.copy > 0 {
			s.copy = 0
		} else {
			s.copy = gen
		}
		return opRestoreNew
	case (k == 7 || k == 8) && !s.stopped:
		s.exec = gen
		return opExec
	}
	return opRefresh
}

// config is the Terraform configuration of the slots.
func config(provider, repo string, slots []slot) string {
	var b strings.Builder
	b.WriteString(provider)
	for i, s := range slots {
		if !s.present {
			continue
		}
		name := fmt.Sprintf("s%d", i)
		desired := "running"
		if s.stopped {
			desired = "stopped"
		}
		fmt.Fprintf(&b, `
resource "sandboxer_sandbox" %q {
  profile       = "profile.compose-checkpoint"
  host          = "soak"
  inputs        = { repo = %q }
  desired_state = %q
  labels        = { slot = %q }
  timeouts {
    create = "2m"
    update = "3m"
    delete = "3m"
  }
}
`, name, repo, desired, name)
		if s.snap > 0 {
			fmt.Fprintf(&b, `
resource "sandboxer_snapshot" %q {
  sandbox_id = sandboxer_sandbox.%s.id
  host       = "soak"
  name       = "%s-%d"
  quiesce    = "stop"
}
`, name, name, name, s.snap)
		}
		if s.restore > 0 {
			fmt.Fprintf(&b, `
resource "sandboxer_restore" "%s_back" {
  snapshot_id       = sandboxer_snapshot.%s.id
  target_sandbox_id = sandboxer_sandbox.%s.id
  host              = "soak"
  triggers          = { gen = "%d" }
}
`, name, name, name, s.restore)
		}
		if s.copy > 0 {
			fmt.Fprintf(&b, `
resource "sandboxer_restore" "%s_copy" {
  snapshot_id = sandboxer_snapshot.%s.id
  host        = "soak"
  triggers    = { gen = "%d" }
  timeouts {
    create = "2m"
  }
}
`, name, name, s.copy)
		}
		if s.exec > 0 {
			fmt.Fprintf(&b, `
resource "sandboxer_command" %q {
  sandbox_id = sandboxer_sandbox.%s.id
  host       = "soak"
  service    = "db"
  command    = ["psql", "-v", "ON_ERROR_STOP=1", "-U", "postgres", "-c", "CREATE TABLE IF NOT EXISTS soak (gen int); INSERT INTO soak VALUES (%d)"]
  triggers   = { gen = "%d" }
  timeout    = "60s"
}
`, name, name, s.exec, s.exec)
		}
	}
	return b.String()
}

// counts is a tally by kind, printed sorted.
type counts map[string]int

func (c counts) String() string {
	if len(c) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, c[k]))
	}
	return strings.Join(parts, ", ")
}
