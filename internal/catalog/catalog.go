// Package catalog holds the profiles — named, versioned recipes saying which
// extension fulfils a sandbox request, which inputs it takes and where it may
// run — and the declarations of the extensions. Built-ins are embedded YAML
// files, one per profile (profile.<name>.yaml) or extension (ext.<name>.yaml);
// users add or override them with files of the same format.
package catalog

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

//go:embed builtin/*.yaml
var builtinFS embed.FS

// Input is an input a profile declares.
type Input struct {
	Name        string `yaml:"name"`
	Required    bool   `yaml:"required"`
	Description string `yaml:"description"`
}

// Profile is one recipe.
type Profile struct {
	Name        string            `yaml:"name"`
	Version     string            `yaml:"version"`
	Description string            `yaml:"description"`
	Extension   string            `yaml:"extension"`
	Placement   []string          `yaml:"placement"` // host or pool names, in order of preference
	TTL         string            `yaml:"ttl"`       // default lifetime, e.g. "2h"
	Inputs      []Input           `yaml:"inputs"`
	Settings    map[string]string `yaml:"settings"` // extension-specific knobs
	Snapshots   SnapshotSettings  `yaml:"snapshots"`
	// HourlyPriceUSD is what a metered extension charges per hour.
	HourlyPriceUSD float64 `yaml:"hourly_price_usd"`
	// Fallback is the extension that serves the profile when the metered
	// one cannot (credits short, or it refuses): routing.
	Fallback string `yaml:"fallback"`

	// Source is "built-in" or the file the profile was read from.
	Source string `yaml:"-"`
}

// SnapshotSettings bound and shape the profile's snapshots.
type SnapshotSettings struct {
	MaxBytes int64  `yaml:"max_bytes"` // 0: the default, 10 GiB
	MaxFiles int    `yaml:"max_files"` // 0: the default, 100,000
	Quiesce  string `yaml:"quiesce"`   // default quiesce: "none", "pause" or "stop"
	// Volumes: snapshots of the profile's compose sandboxes take their
	// named volumes too unless a snapshot says otherwise (include_volumes).
	Volumes bool `yaml:"volumes"`
}

// TTLDuration is the profile's default lifetime (0 when it sets none).
func (p *Profile) TTLDuration() time.Duration {
	d, _ := time.ParseDuration(p.TTL) // validated when parsed
	return d
}

// ExtensionDecl declares an extension: what it is and what it can do.
type ExtensionDecl struct {
	Name              string `yaml:"name"`
	Description       string `yaml:"description"`
	Kind              string `yaml:"kind"` // "self-hosted" or "metered"
	SupportsSnapshots bool   `yaml:"supports_snapshots"`

	Source string `yaml:"-"`
}

// Catalog is the set of known profiles and extensions by name.
type Catalog struct {
	profiles   map[string]*Profile
	extensions map[string]*ExtensionDecl
}

// Builtin returns the embedded profiles and extensions.
func Builtin() (*Catalog, error) {
	c := &Catalog{profiles: map[string]*Profile{}, extensions: map[string]*ExtensionDecl{}}
	entries, err := fs.ReadDir(builtinFS, "builtin")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		data, err := builtinFS.ReadFile("builtin/" + e.Name())
		if err != nil {
			return nil, err
		}
		if err := c.add(e.Name(), data, "built-in"); err != nil {
			return nil, err
		}
	}
	return c, c.check()
}

// Load returns the built-ins plus the profile.*.yaml and ext.*.yaml files of
// dir (if dir is not empty). A file's profile replaces a built-in of the
// same name; its Source says which file it came from.
func Load(dir string) (*Catalog, error) {
	c, err := Builtin()
	if err != nil || dir == "" {
		return c, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("profiles_dir %s: %w", dir, err)
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".yaml") && !strings.HasSuffix(name, ".yml") {
			continue
		}
		if !strings.HasPrefix(name, "profile.") && !strings.HasPrefix(name, "ext.") {
			continue
		}
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if err := c.add(name, data, path); err != nil {
			return nil, err
		}
	}
	return c, c.check()
}

// add parses one file; its name says whether it is a profile or an extension.
func (c *Catalog) add(base string, data []byte, source string) error {
	file := source
	if source == "built-in" {
		file = base
	}
	if strings.HasPrefix(base, "ext.") {
		x, err := parseExtension(data, file)
		if err != nil {
			return err
		}
		x.Source = source
		c.extensions[x.Name] = x
		return nil
	}
	p, err := Parse(data, file)
	if err != nil {
		return err
	}
	if want := strings.TrimSuffix(strings.TrimSuffix(base, ".yaml"), ".yml"); p.Name != want {
		return fmt.Errorf("profile file %s: field name: %q does not match the file name (want %q)", file, p.Name, want)
	}
	p.Source = source
	c.profiles[p.Name] = p
	return nil
}

// check cross-checks profiles against the declared extensions.
func (c *Catalog) check() error {
	for _, name := range c.Names() {
		p := c.profiles[name]
		for field, ext := range map[string]string{"extension": p.Extension, "fallback": p.Fallback} {
			if ext == "" {
				continue
			}
			if _, ok := c.extensions[ext]; !ok {
				return fmt.Errorf("profile file %s: field %s: unknown extension %q (declared: %s)", p.Source, field, ext, strings.Join(c.ExtensionNames(), ", "))
			}
		}
	}
	return nil
}

func decodeStrict(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	return dec.Decode(v)
}

func parseExtension(data []byte, file string) (*ExtensionDecl, error) {
	var x ExtensionDecl
	if err := decodeStrict(data, &x); err != nil {
		return nil, fmt.Errorf("extension file %s: %w", file, err)
	}
	if !strings.HasPrefix(x.Name, "ext.") {
		return nil, fmt.Errorf("extension file %s: field name: %q must start with \"ext.\"", file, x.Name)
	}
	if x.Kind != "self-hosted" && x.Kind != "metered" {
		return nil, fmt.Errorf("extension file %s: field kind: %q must be self-hosted or metered", file, x.Kind)
	}
	return &x, nil
}

// Parse reads one profile file. Unknown fields are errors, so a typo in a
// profile is reported instead of silently ignored.
func Parse(data []byte, file string) (*Profile, error) {
	var p Profile
	if err := decodeStrict(data, &p); err != nil {
		return nil, fmt.Errorf("profile file %s: %w", file, err)
	}
	if !strings.HasPrefix(p.Name, "profile.") {
		return nil, fmt.Errorf("profile file %s: field name: %q must start with \"profile.\"", file, p.Name)
	}
	if !strings.HasPrefix(p.Extension, "ext.") {
		return nil, fmt.Errorf("profile file %s: field extension: %q must name an extension such as ext.compose-ssh", file, p.Extension)
	}
	if p.TTL != "" {
		if d, err := time.ParseDuration(p.TTL); err != nil || d <= 0 {
			return nil, fmt.Errorf("profile file %s: field ttl: %q is not a positive duration such as 90m or 2h", file, p.TTL)
		}
	}
	// Not `< 0`: YAML's .nan and .inf pass that, and a NaN price compares
	// false against every credit balance and is never debited.
	if !(p.HourlyPriceUSD >= 0) || math.IsInf(p.HourlyPriceUSD, 1) {
		return nil, fmt.Errorf("profile file %s: field hourly_price_usd: must be a finite number, not negative", file)
	}
	if q := p.Snapshots.Quiesce; q != "" && q != "none" && q != "pause" && q != "stop" {
		return nil, fmt.Errorf("profile file %s: field snapshots.quiesce: %q must be none, pause or stop", file, q)
	}
	seen := map[string]bool{}
	for i, in := range p.Inputs {
		if in.Name == "" {
			return nil, fmt.Errorf("profile file %s: field inputs[%d].name is empty", file, i)
		}
		if seen[in.Name] {
			return nil, fmt.Errorf("profile file %s: field inputs: %q is declared twice", file, in.Name)
		}
		seen[in.Name] = true
	}
	p.Source = file
	return &p, nil
}

// Extension returns the named extension's declaration.
func (c *Catalog) Extension(name string) (*ExtensionDecl, error) {
	if x, ok := c.extensions[name]; ok {
		return x, nil
	}
	return nil, fmt.Errorf("unknown extension %q; declared: %s", name, strings.Join(c.ExtensionNames(), ", "))
}

// ExtensionNames lists the declared extensions in order.
func (c *Catalog) ExtensionNames() []string {
	names := slices.Sorted(maps.Keys(c.extensions))
	return names
}

// Get returns the named profile.
func (c *Catalog) Get(name string) (*Profile, error) {
	if p, ok := c.profiles[name]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("unknown profile %q; known profiles: %s", name, strings.Join(c.Names(), ", "))
}

// Names lists the profile names in order.
func (c *Catalog) Names() []string {
	names := slices.Sorted(maps.Keys(c.profiles))
	return names
}

// CheckInputs reports missing required inputs and inputs the profile does
// not declare.
func (p *Profile) CheckInputs(inputs map[string]string) error {
	declared := map[string]bool{}
	var problems []string
	for _, in := range p.Inputs {
		declared[in.Name] = true
		if _, ok := inputs[in.Name]; in.Required && !ok {
			problems = append(problems, fmt.Sprintf("missing required input %q (%s)", in.Name, in.Description))
		}
	}
	unknown := slices.DeleteFunc(slices.Sorted(maps.Keys(inputs)), func(name string) bool { return declared[name] })
	for _, name := range unknown {
		problems = append(problems, fmt.Sprintf("unknown input %q (declared inputs: %s)", name, p.inputNames()))
	}
	if len(problems) > 0 {
		return fmt.Errorf("profile %s: %s", p.Name, strings.Join(problems, "; "))
	}
	return nil
}

func (p *Profile) inputNames() string {
	if len(p.Inputs) == 0 {
		return "none"
	}
	names := make([]string, len(p.Inputs))
	for i, in := range p.Inputs {
		names[i] = in.Name
	}
	return strings.Join(names, ", ")
}
