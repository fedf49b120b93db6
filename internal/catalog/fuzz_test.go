package catalog

import (
	"os"
	"path/filepath"
	"testing"
)

// Profile files are user input (profiles_dir): any bytes are an error or a
// profile that passes its own checks, never a panic.
func FuzzParseProfile(f *testing.F) {
	f.Add([]byte("name: profile.workspace\nversion: \"9.9.9\"\nextension: ext.vm-packer\n"))
	f.Add([]byte("name: profile.broken\nextension: ext.vm-packer\nttl: forever\n"))
	f.Add([]byte("name: x\nsnapshots:\n  quiesce: pause\n  max_bytes: -1\n"))
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
	})
}
