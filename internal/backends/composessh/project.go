package composessh

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/composefile"
)

// The compose file is read on the client at plan time (composefile): what
// it accepts tells the plan which services the sandbox will run, and the
// checks below what would break a sandbox's isolation.

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
	file, err := composefile.Find(inputs)
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
	l, err := composefile.LoadFile(repo, file, env)
	if err != nil {
		return backends.Plan{}, nil, err
	}
	project := l.Project

	var plan backends.Plan
	for _, name := range sortedServiceNames(project) {
		svc := project.Services[name]
		plan.Services = append(plan.Services, name)
		if svc.ContainerName != "" {
			return backends.Plan{}, nil, l.Errorf([]string{"services", name, "container_name"}, "service %q sets container_name %q: container names are global on a host, so two sandboxes of this stack "+
				"would collide; remove it (compose names containers after the sandbox's own project)", name, svc.ContainerName)
		}
		if svc.Build != nil {
			if err := checkBuild(repo, name, svc.Build); err != nil {
				return backends.Plan{}, nil, l.Errorf([]string{"services", name, "build"}, "%s", err.Error())
			}
		}
		for _, port := range svc.Ports {
			if port.Published != "" && port.HostIP == "" {
				plan.Warnings = append(plan.Warnings, fmt.Sprintf("%s: service %q publishes host port %s: a second sandbox of this stack on the same host cannot start "+
					"while this one runs; publish the container port alone (\"%d\") to get a free host port", l.Ref("services", name, "ports"), name, port.Published, port.Target))
			}
		}
		for _, v := range svc.Volumes {
			if v.Type == types.VolumeTypeBind && !composefile.Within(repo, v.Source) {
				plan.Warnings = append(plan.Warnings, fmt.Sprintf("%s: service %q bind-mounts %s from outside the repo: the sandbox shares it with "+
					"everything else on the host, and checkpoints do not capture it", l.Ref("services", name, "volumes"), name, v.Source))
			}
		}
	}
	if len(plan.Services) == 0 {
		return backends.Plan{}, nil, l.Errorf(nil, "no service would start: every service is disabled by a profile, or none is declared")
	}
	for _, name := range slices.Sorted(maps.Keys(project.Volumes)) {
		v := project.Volumes[name]
		switch {
		case bool(v.External):
			plan.Warnings = append(plan.Warnings, fmt.Sprintf("%s: volume %q is external: it is shared with whatever else uses it on the host, "+
				"destroying the sandbox leaves it in place, and checkpoints do not capture it", l.Ref("volumes", name), name))
		case v.Name != "" && v.Name != project.Name+"_"+name:
			plan.Warnings = append(plan.Warnings, fmt.Sprintf("%s: volume %q is named %q: every sandbox of this stack on a host shares it, "+
				"and a checkpoint restored into a new sandbox fills that sandbox's own %q, not it; remove `name:`",
				l.Ref("volumes", name), name, v.Name, name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(project.Networks)) {
		if project.Networks[name].External {
			plan.Warnings = append(plan.Warnings, fmt.Sprintf("%s: network %q is external: sandboxes attached to it can reach each other",
				l.Ref("networks", name), name))
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
	if !composefile.Within(repo, ctx) {
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
	if !composefile.Within(repo, dockerfile) {
		return fmt.Errorf("service %q uses Dockerfile %s outside the repo %s: only the repo is copied to the host", service, dockerfile, repo)
	}
	if st, err := os.Stat(dockerfile); err != nil || !st.Mode().IsRegular() {
		return fmt.Errorf("service %q: Dockerfile %s does not exist", service, dockerfile)
	}
	return nil
}

func sortedServiceNames(p *types.Project) []string {
	names := slices.Sorted(maps.Keys(p.Services))
	return names
}

// projectFromHost reads the services and managed networks of a project
// from `compose config` as run on the host: a restore without a repo has
// its compose file only in the restored workspace there. Both compose v1
// and v2 print the resolved project as YAML, which compose-go reads like
// any compose file, so a restored stack's networks get subnets from the
// pool exactly as a new one's do.
func projectFromHost(raw []byte) (services, networks []string, err error) {
	composefile.Quiet()
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
