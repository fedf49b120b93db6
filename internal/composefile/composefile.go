// Package composefile reads compose files on the client, at plan time, with
// compose-go, the library `docker compose` v2 itself loads projects with:
// what it refuses, compose on the host would refuse too, only later and
// after a copy. The compose-based extensions (ext.compose-ssh, ext.swarm)
// each check the loaded project for what they cannot run.
package composefile

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/sirupsen/logrus"
	"go.yaml.in/yaml/v3"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/safepath"
)

// DefaultFiles are tried in order when the compose_file input is unset.
var DefaultFiles = []string{"compose.yaml", "compose.yml", "docker-compose.yml", "docker-compose.yaml"}

// Find checks the repo input and names the compose file in it.
func Find(inputs map[string]string) (string, error) {
	repo := inputs["repo"]
	if repo == "" {
		return "", fmt.Errorf("input repo is required: a local directory holding a compose file")
	}
	if err := safepath.NoParentSteps(repo); err != nil {
		return "", fmt.Errorf("input repo: %w", err)
	}
	if st, err := os.Stat(repo); err != nil || !st.IsDir() {
		return "", fmt.Errorf("input repo: %s is not a readable directory on this machine", repo)
	}
	candidates := DefaultFiles
	if f := inputs["compose_file"]; f != "" {
		if err := safepath.Relative(f); err != nil {
			return "", fmt.Errorf("input compose_file: %w", err)
		}
		candidates = []string{f}
	}
	for _, f := range candidates {
		if st, err := os.Stat(filepath.Join(repo, f)); err == nil && st.Mode().IsRegular() {
			return f, nil
		}
	}
	return "", fmt.Errorf("input repo: no compose file in %s (looked for %s)", repo, strings.Join(candidates, ", "))
}

// FileError is a problem in a compose file, located where the library or the
// file's YAML says.
type FileError struct {
	File string // path of the compose file on this machine
	Line int    // 1-based; 0 when unknown
	Msg  string
}

func (e *FileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("compose file %s, line %d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("compose file %s: %s", e.File, e.Msg)
}

var quietLogrus sync.Once

// Quiet silences compose-go's warnings, which it writes through logrus'
// global logger (an obsolete `version:`, an unset variable): they would
// land on the provider's stderr as noise. The extensions' checks say what
// matters.
func Quiet() { quietLogrus.Do(func() { logrus.SetOutput(io.Discard) }) }

// Loaded is a compose file as compose-go resolved it, with the lines of its
// keys for diagnostics.
type Loaded struct {
	Project *types.Project
	Path    string // the compose file on this machine
	Repo    string // the directory it was loaded from ("" for a resolved project)
	raw     []byte // the file as written, for Isolate
	lines   lineIndex
}

// Line is the 1-based line of keys' last element in the compose file (0
// when unknown).
func (l *Loaded) Line(keys ...string) int { return l.lines.at(keys...) }

// Errorf is a FileError at keys' line.
func (l *Loaded) Errorf(keys []string, format string, args ...any) error {
	return &FileError{File: l.Path, Line: l.Line(keys...), Msg: fmt.Sprintf(format, args...)}
}

// Key is a key of a mapping in the compose file as written, with its line.
type Key struct {
	Name string
	Line int
}

// Keys are the keys of the mapping at keys in the compose file as written
// (not as resolved: an include or extends adds none), in file order; nil
// when there is no mapping there.
func (l *Loaded) Keys(keys ...string) []Key {
	n := l.lines.node(keys...)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	var list []Key
	for i := 0; i+1 < len(n.Content); i += 2 {
		list = append(list, Key{Name: n.Content[i].Value, Line: n.Content[i].Line})
	}
	return list
}

// IsMapping reports whether the value at keys, as written, is a mapping
// (depends_on's long form, say, against its list form).
func (l *Loaded) IsMapping(keys ...string) bool {
	n := l.lines.node(keys...)
	return n != nil && n.Kind == yaml.MappingNode
}

// Ref is "path, line N" for warnings.
func (l *Loaded) Ref(keys ...string) string { return lineRef(l.Path, l.Line(keys...)) }

// Load finds the repo input's compose file and loads it as compose would on
// the host; env is what the workspace .env will hold (empty: the repo's own
// .env is read).
func Load(inputs, env map[string]string) (*Loaded, error) {
	file, err := Find(inputs)
	if err != nil {
		return nil, err
	}
	repo, err := filepath.EvalSymlinks(inputs["repo"])
	if err != nil {
		return nil, fmt.Errorf("input repo: %w", err)
	}
	return LoadFile(repo, file, env)
}

// LoadFile loads file in repo (an absolute directory without symlinks).
func LoadFile(repo, file string, env map[string]string) (*Loaded, error) {
	Quiet()

	path := filepath.Join(repo, file)
	opts := []cli.ProjectOptionsFn{
		cli.WithWorkingDirectory(repo),
		cli.WithName("sbx-plan"),
		cli.WithResolvedPaths(true),
		cli.WithLoadOptions(func(o *loader.Options) {
			// The host resolves env_file entries when the stack starts; a
			// missing one is compose's error to report there, not a plan's.
			o.SkipResolveEnvironment = true
		}),
	}
	if len(env) == 0 {
		opts = append(opts, cli.WithEnvFiles(), cli.WithDotEnv)
	} else {
		list := make([]string, 0, len(env))
		for k, v := range env {
			list = append(list, k+"="+v)
		}
		opts = append(opts, cli.WithEnv(list))
	}
	// The profiles COMPOSE_PROFILES (in that .env or env) turns on: the
	// host's compose starts those services too.
	opts = append(opts, cli.WithDefaultProfiles())
	po, err := cli.NewProjectOptions([]string{path}, opts...)
	if err != nil {
		return nil, &FileError{File: path, Msg: err.Error()}
	}
	project, err := po.LoadProject(context.Background())
	if err != nil {
		return nil, &FileError{File: path, Line: yamlErrorLine(err.Error()), Msg: strings.TrimPrefix(err.Error(), path+": ")}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, &FileError{File: path, Msg: err.Error()}
	}
	return &Loaded{Project: project, Path: path, Repo: repo, raw: raw, lines: newLineIndex(raw)}, nil
}

// LoadResolved reads a project as `compose config` prints it on a host
// (already interpolated, paths those of the host): a restore whose compose
// file exists only in the restored workspace. Compose v1 and v2 both print
// YAML that compose-go reads like any compose file.
func LoadResolved(name string, raw []byte) (*Loaded, error) {
	Quiet()
	project, err := loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  "/",
		ConfigFiles: []types.ConfigFile{{Filename: name, Content: raw}},
		Environment: types.Mapping{},
	}, func(o *loader.Options) {
		// Already interpolated and resolved on the host.
		o.SkipInterpolation, o.SkipResolveEnvironment, o.ResolvePaths = true, true, false
		o.SetProjectName("sbx-restore", true)
	})
	if err != nil {
		return nil, err
	}
	return &Loaded{Project: project, Path: name, raw: raw, lines: newLineIndex(raw)}, nil
}

// Within reports whether path (absolute, as the loader resolves it) lies in dir.
func Within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

func lineRef(path string, line int) string {
	if line > 0 {
		return fmt.Sprintf("%s, line %d", path, line)
	}
	return path
}

// yamlErrorLine finds "line N" in a YAML parser error.
func yamlErrorLine(msg string) int {
	i := strings.Index(msg, "line ")
	if i < 0 {
		return 0
	}
	n := 0
	for _, c := range msg[i+5:] {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// lineIndex finds the line of a key in the compose file's YAML.
type lineIndex struct{ root *yaml.Node }

func newLineIndex(raw []byte) lineIndex {
	var doc yaml.Node
	if yaml.Unmarshal(raw, &doc) != nil || len(doc.Content) == 0 {
		return lineIndex{}
	}
	return lineIndex{root: doc.Content[0]}
}

// node is the value at keys; nil when the path is not in the file.
func (l lineIndex) node(keys ...string) *yaml.Node {
	n := l.root
	for _, k := range keys {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				next = n.Content[i+1]
				break
			}
		}
		n = next
	}
	return n
}

// at returns the line of keys' last element, or of the deepest one found
// when the rest comes from elsewhere (an extends or include); 0 for none.
func (l lineIndex) at(keys ...string) int {
	n, line := l.root, 0
	for _, k := range keys {
		if n == nil || n.Kind != yaml.MappingNode {
			return line
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				line, next = n.Content[i].Line, n.Content[i+1]
				break
			}
		}
		if next == nil {
			return line
		}
		n = next
	}
	return line
}
