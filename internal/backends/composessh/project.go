package composessh

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/sirupsen/logrus"
	"go.yaml.in/yaml/v3"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
)

// The compose file is read on the client at plan time with compose-go, the
// library `docker compose` v2 itself loads projects with: what it refuses,
// compose on the host would refuse too, only later and after a copy. What it
// accepts tells the plan which services the sandbox will run.

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

// Plan loads the repo's compose project as compose would on the host and
// checks what would break a sandbox's isolation or cannot work on the host.
// env is what the workspace .env will hold; when empty the sandbox writes no
// .env and compose reads the repo's own, copied with it.
func (e *Extension) Plan(p *catalog.Profile, inputs, env map[string]string) (backends.Plan, error) {
	plan, _, err := e.load(p, inputs, env)
	return plan, err
}

// load is Plan, plus the networks the stack creates whose addresses the
// provider chooses (see networks.go).
func (e *Extension) load(p *catalog.Profile, inputs, env map[string]string) (backends.Plan, []string, error) {
	if image := canaryImage(p, inputs); image != "" {
		return backends.Plan{Services: []string{"canary"}}, []string{"default"}, nil
	}
	file, err := composeFile(inputs)
	if err != nil {
		return backends.Plan{}, nil, err
	}
	repo, err := filepath.EvalSymlinks(inputs["repo"])
	if err != nil {
		return backends.Plan{}, nil, fmt.Errorf("input repo: %w", err)
	}
	return loadProject(repo, file, env)
}

// loadPlan is loadProject of repo's docker-compose.yml without the networks
// (for tests).
func loadPlan(repo string, env map[string]string) (backends.Plan, error) {
	plan, _, err := loadProject(repo, "docker-compose.yml", env)
	return plan, err
}

func loadProject(repo, file string, env map[string]string) (backends.Plan, []string, error) {
	// compose-go warns through logrus' global logger; those warnings (an
	// obsolete `version:`, an unset variable) would otherwise land on the
	// provider's stderr as noise. The checks below say what matters.
	quietLogrus.Do(func() { logrus.SetOutput(io.Discard) })

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
	po, err := cli.NewProjectOptions([]string{path}, opts...)
	if err != nil {
		return backends.Plan{}, nil, &FileError{File: path, Msg: err.Error()}
	}
	project, err := po.LoadProject(context.Background())
	if err != nil {
		return backends.Plan{}, nil, &FileError{File: path, Line: yamlErrorLine(err.Error()), Msg: strings.TrimPrefix(err.Error(), path+": ")}
	}
	raw, _ := os.ReadFile(path)
	lines := newLineIndex(raw)

	var plan backends.Plan
	for _, name := range sortedServiceNames(project) {
		svc := project.Services[name]
		plan.Services = append(plan.Services, name)
		if svc.ContainerName != "" {
			return backends.Plan{}, nil, &FileError{File: path, Line: lines.at("services", name, "container_name"),
				Msg: fmt.Sprintf("service %q sets container_name %q: container names are global on a host, so two sandboxes of this stack "+
					"would collide; remove it (compose names containers after the sandbox's own project)", name, svc.ContainerName)}
		}
		if svc.Build != nil {
			if err := checkBuild(repo, name, svc.Build); err != nil {
				return backends.Plan{}, nil, &FileError{File: path, Line: lines.at("services", name, "build"), Msg: err.Error()}
			}
		}
		for _, port := range svc.Ports {
			if port.Published != "" && port.HostIP == "" {
				plan.Warnings = append(plan.Warnings, fmt.Sprintf("%s: service %q publishes host port %s: a second sandbox of this stack on the same host cannot start "+
					"while this one runs; publish the container port alone (\"%d\") to get a free host port", lineRef(path, lines.at("services", name, "ports")), name, port.Published, port.Target))
			}
		}
		for _, v := range svc.Volumes {
			if v.Type == types.VolumeTypeBind && !within(repo, v.Source) {
				plan.Warnings = append(plan.Warnings, fmt.Sprintf("%s: service %q bind-mounts %s from outside the repo: the sandbox shares it with "+
					"everything else on the host, and checkpoints do not capture it", lineRef(path, lines.at("services", name, "volumes")), name, v.Source))
			}
		}
	}
	if len(plan.Services) == 0 {
		return backends.Plan{}, nil, &FileError{File: path, Msg: "no service would start: every service is disabled by a profile, or none is declared"}
	}
	for _, name := range slices.Sorted(maps.Keys(project.Volumes)) {
		v := project.Volumes[name]
		switch {
		case bool(v.External):
			plan.Warnings = append(plan.Warnings, fmt.Sprintf("%s: volume %q is external: it is shared with whatever else uses it on the host, "+
				"destroying the sandbox leaves it in place, and checkpoints do not capture it", lineRef(path, lines.at("volumes", name)), name))
		case v.Name != "" && v.Name != project.Name+"_"+name:
			plan.Warnings = append(plan.Warnings, fmt.Sprintf("%s: volume %q is named %q: every sandbox of this stack on a host shares it, "+
				"and a checkpoint restored into a new sandbox fills that sandbox's own %q, not it; remove `name:`",
				lineRef(path, lines.at("volumes", name)), name, v.Name, name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(project.Networks)) {
		if project.Networks[name].External {
			plan.Warnings = append(plan.Warnings, fmt.Sprintf("%s: network %q is external: sandboxes attached to it can reach each other",
				lineRef(path, lines.at("networks", name)), name))
		}
	}
	return plan, managedNetworks(project), nil
}

// checkBuild refuses a build the host cannot do: only the repo is copied to
// the host, so the build context must lie inside it.
func checkBuild(repo, service string, b *types.BuildConfig) error {
	ctx := b.Context
	if strings.Contains(ctx, "://") || strings.HasPrefix(ctx, "git@") {
		return fmt.Errorf("service %q builds from %s: the host builds from the copied repo only; vendor the build context into the repo", service, ctx)
	}
	if !within(repo, ctx) {
		return fmt.Errorf("service %q has build context %s outside the repo %s: only the repo is copied to the host", service, ctx, repo)
	}
	if b.DockerfileInline != "" {
		return nil
	}
	dockerfile := b.Dockerfile
	if dockerfile == "" {
		dockerfile = "Dockerfile"
	}
	if !filepath.IsAbs(dockerfile) {
		dockerfile = filepath.Join(ctx, dockerfile)
	}
	if !within(repo, dockerfile) {
		return fmt.Errorf("service %q uses Dockerfile %s outside the repo %s: only the repo is copied to the host", service, dockerfile, repo)
	}
	if st, err := os.Stat(dockerfile); err != nil || !st.Mode().IsRegular() {
		return fmt.Errorf("service %q: Dockerfile %s does not exist", service, dockerfile)
	}
	return nil
}

// within reports whether path (absolute, as the loader resolves it) lies in dir.
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

func sortedServiceNames(p *types.Project) []string {
	names := slices.Sorted(maps.Keys(p.Services))
	return names
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

// projectFromHost reads the services and managed networks of a project
// from `compose config` as run on the host: a restore without a repo has
// its compose file only in the restored workspace there. Both compose v1
// and v2 print the resolved project as YAML, which compose-go reads like
// any compose file, so a restored stack's networks get subnets from the
// pool exactly as a new one's do.
func projectFromHost(raw []byte) (services, networks []string, err error) {
	quietLogrus.Do(func() { logrus.SetOutput(io.Discard) })
	project, err := loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  "/",
		ConfigFiles: []types.ConfigFile{{Filename: "compose config", Content: raw}},
		Environment: types.Mapping{},
	}, func(o *loader.Options) {
		// Already interpolated and resolved on the host.
		o.SkipInterpolation, o.SkipResolveEnvironment, o.ResolvePaths = true, true, false
		o.SetProjectName("sbx-restore", true)
	})
	if err != nil {
		return nil, nil, err
	}
	return sortedServiceNames(project), managedNetworks(project), nil
}
