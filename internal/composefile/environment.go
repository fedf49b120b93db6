package composefile

import (
	"fmt"
	"os"

	"github.com/compose-spec/compose-go/v2/dotenv"
)

// ServiceEnvironment is service name's environment as compose gives it to
// the container: its env_file entries in order, then `environment` over
// them. A variable written without a value takes the project's (.env or
// the sandbox's env); one the project has not either is left out, as
// compose leaves it out. Every env_file must lie in the repo: on the
// client, a file outside it is nobody's business to read.
func (l *Loaded) ServiceEnvironment(name string) (map[string]string, error) {
	svc, ok := l.Project.Services[name]
	if !ok {
		return nil, fmt.Errorf("no service %q", name)
	}
	env := map[string]string{}
	for _, f := range svc.EnvFiles {
		if l.Repo == "" || !Within(l.Repo, f.Path) {
			return nil, fmt.Errorf("env_file %s is outside the repo", f.Path)
		}
		if _, err := os.Stat(f.Path); err != nil && !f.Required {
			continue
		}
		vars, err := dotenv.GetEnvFromFile(l.Project.Environment, []string{f.Path})
		if err != nil {
			return nil, fmt.Errorf("env_file %s: %w", f.Path, err)
		}
		for k, v := range vars {
			env[k] = v
		}
	}
	for k, v := range svc.Environment {
		switch {
		case v != nil:
			env[k] = *v
		case l.Project.Environment[k] != "":
			env[k] = l.Project.Environment[k]
		default:
			if _, set := l.Project.Environment[k]; set {
				env[k] = ""
			}
		}
	}
	return env, nil
}
