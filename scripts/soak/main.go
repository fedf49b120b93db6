//go:build linux

// Command soak runs sandboxes through random lifecycle steps with the real
// Terraform CLI while faults arrive from a seeded schedule, and after each
// round checks that nothing was lost or orphaned (docs/reliability.md).
// scripts/soak.sh builds what it needs and runs it; the seed it prints
// replays a run.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

func main() {
	var o options
	flag.IntVar(&o.minutes, "minutes", 3, "run rounds for this many minutes, then destroy everything and check once more")
	flag.Uint64Var(&o.seed, "seed", 0, "seed of the schedule (0: drawn, and printed)")
	flag.IntVar(&o.slots, "slots", 3, "sandboxes the configuration may hold at once")
	flag.StringVar(&o.terraform, "terraform", "terraform", "the Terraform (or OpenTofu) CLI")
	flag.StringVar(&o.cliConfig, "cli-config", os.Getenv("TF_CLI_CONFIG_FILE"), "CLI config with the provider's dev_overrides")
	flag.StringVar(&o.work, "work", "", "scratch directory (made by soak.sh)")
	flag.StringVar(&o.toxiproxy, "toxiproxy", "", "toxiproxy server binary")
	flag.StringVar(&o.harness, "harness", filepath.Join(os.Getenv("HOME"), ".cache", "sandboxer-harness"), "the harness state directory")
	flag.StringVar(&o.repoRoot, "repo-root", ".", "this repository (for scripts/harness/up.sh)")
	flag.StringVar(&o.image, "image", "sandboxer-postgres:15", "the database image of the sandboxes' stack")
	flag.StringVar(&o.log, "log", "", "a file to which every Terraform run's output is appended, round by round (kept after the run)")
	flag.Parse()
	if o.seed == 0 {
		o.seed = rand.Uint64() //nolint:gosec // a schedule's seed, printed to replay it
	}
	fmt.Printf("soak: seed %d (replay: scripts/soak.sh --minutes %d --seed %d)\n", o.seed, o.minutes, o.seed)
	s, err := newSoak(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	defer s.close()
	// Interrupted, it still unmounts and stops what it started.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		s.close()
		os.Exit(130)
	}()
	s.run(time.Duration(o.minutes) * time.Minute)
	s.report(os.Stdout)
	s.close() // os.Exit runs no deferred call
	if s.violations() > 0 {
		os.Exit(1)
	}
}

// options are the command line's.
type options struct {
	minutes   int
	seed      uint64
	slots     int
	terraform string
	cliConfig string
	work      string
	toxiproxy string
	harness   string
	repoRoot  string
	image     string
	log       string
}
