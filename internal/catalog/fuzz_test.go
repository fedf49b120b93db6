package catalog

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Profile files are user input (profiles_dir): any bytes are an error or a
// profile that passes its own checks, never a panic.
func FuzzParseProfile(f *testing.F) {
	f.Add([]byte("name: profile.workspace\nversion: \"9.9.9\"\nextension: ext.vm-packer\n"))
	f.Add([]byte("name: profile.broken\nextension: ext.vm-packer\nttl: forever\n"))
	f.Add([]byte("name: x\nsnapshots:\n  quiesce: pause\n  max_bytes: -1\n"))
	f.Add([]byte("name: profile.x\nextension: ext.y\nhourly_price_usd: .nan\n"))
	f.Add([]byte("name: profile.x\nextension: ext.y\nhourly_price_usd: .inf\nttl: 1ns\n"))
	f.Add([]byte("name: profile.x\nextension: ext.y\nsettings: {a: \"1\", b: \"\\u2028\"}\ninputs: [{name: a, required: true}]\n"))
	f.Add([]byte("{{{"))
	f.Add([]byte(""))
	if entries, err := os.ReadDir("builtin"); err == nil {
		for _, e := range entries {
			if data, err := os.ReadFile(filepath.Join("builtin", e.Name())); err == nil {
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data, "profile.fuzz.yaml")
		if err != nil {
			return
		}
		if p == nil {
			t.Fatal("Parse returned neither a profile nor an error")
		}
		// What Parse accepts holds to the rules it states.
		switch {
		case !strings.HasPrefix(p.Name, "profile."), !strings.HasPrefix(p.Extension, "ext."):
			t.Fatalf("accepted name %q, extension %q", p.Name, p.Extension)
		case p.TTL != "" && p.TTLDuration() <= 0:
			t.Fatalf("accepted ttl %q", p.TTL)
		case !(p.HourlyPriceUSD >= 0) || math.IsInf(p.HourlyPriceUSD, 0):
			t.Fatalf("accepted hourly_price_usd %v", p.HourlyPriceUSD)
		case p.Snapshots.Quiesce != "" && p.Snapshots.Quiesce != "none" && p.Snapshots.Quiesce != "pause" && p.Snapshots.Quiesce != "stop":
			t.Fatalf("accepted quiesce %q", p.Snapshots.Quiesce)
		}
		if p.Source != "profile.fuzz.yaml" {
			t.Fatalf("source %q", p.Source)
		}
		seen := map[string]bool{}
		for _, in := range p.Inputs {
			if in.Name == "" || seen[in.Name] {
				t.Fatalf("accepted inputs %+v", p.Inputs)
			}
			seen[in.Name] = true
		}
		// No encode round trip: the provider never writes profiles, and
		// gopkg.in/yaml.v3's encoder loses a leading newline of a block
		// scalar ("\n0\n" reads back as "0\n"), which is not this code's.
	})
}
