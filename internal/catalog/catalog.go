// Package catalog holds the profiles: named, versioned recipes saying which
// extension fulfils a sandbox request, which inputs it takes and where it may
// run. Built-ins are embedded YAML files, one per profile.
package catalog

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"

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
	Placement   []string          `yaml:"placement"`
	Inputs      []Input           `yaml:"inputs"`
	Settings    map[string]string `yaml:"settings"` // extension-specific knobs
	Snapshots   SnapshotSettings  `yaml:"snapshots"`

	// Source is "built-in" or the file the profile was read from.
	Source string `yaml:"-"`
}

// SnapshotSettings bound and shape the profile's snapshots.
type SnapshotSettings struct {
	MaxBytes int64 `yaml:"max_bytes"` // 0: the default, 10 GiB
	MaxFiles int   `yaml:"max_files"` // 0: the default, 100,000
}

// Catalog is the set of known profiles by name.
type Catalog struct {
	profiles map[string]*Profile
}

// Builtin returns the embedded profiles.
func Builtin() (*Catalog, error) {
	c := &Catalog{profiles: map[string]*Profile{}}
	err := fs.WalkDir(builtinFS, "builtin", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := builtinFS.ReadFile(path)
		if err != nil {
			return err
		}
		p, err := Parse(data, path)
		if err != nil {
			return err
		}
		p.Source = "built-in"
		c.profiles[p.Name] = p
		return nil
	})
	return c, err
}

// Parse reads one profile file. Unknown fields are errors, so a typo in a
// profile is reported instead of silently ignored.
func Parse(data []byte, file string) (*Profile, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var p Profile
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("profile file %s: %w", file, err)
	}
	if !strings.HasPrefix(p.Name, "profile.") {
		return nil, fmt.Errorf("profile file %s: field name: %q must start with \"profile.\"", file, p.Name)
	}
	if !strings.HasPrefix(p.Extension, "ext.") {
		return nil, fmt.Errorf("profile file %s: field extension: %q must name an extension such as ext.compose-ssh", file, p.Extension)
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

// Get returns the named profile.
func (c *Catalog) Get(name string) (*Profile, error) {
	if p, ok := c.profiles[name]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("unknown profile %q; known profiles: %s", name, strings.Join(c.Names(), ", "))
}

// Names lists the profile names in order.
func (c *Catalog) Names() []string {
	names := make([]string, 0, len(c.profiles))
	for n := range c.profiles {
		names = append(names, n)
	}
	sort.Strings(names)
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
	var unknown []string
	for name := range inputs {
		if !declared[name] {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(unknown)
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
