package composessh

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// restoredProject over SSH, against the host's real compose: the compose
// file is found among the default names (or the one named), the project it
// describes is resolved in the same command, and a missing or invalid file
// is an error naming what was looked for.
func TestRestoredProjectFindsAndResolves(t *testing.T) {
	testharness.RequireDocker(t)
	h := testharness.SSHHost(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	compose, err := New(os.Getenv("SANDBOXER_COMPOSE_CMD")).compose(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	valid := "services:\n  web:\n    image: busybox\n  db:\n    image: busybox\n    networks: [back]\nnetworks:\n  back: {}\n"
	cases := []struct {
		name, input string
		files       map[string]string
		wantFile    string
		wantErr     string
	}{
		{name: "first default name", files: map[string]string{"compose.yaml": valid, "docker-compose.yml": "not: [valid"}, wantFile: "compose.yaml"},
		{name: "a later default name", files: map[string]string{"docker-compose.yml": valid}, wantFile: "docker-compose.yml"},
		{name: "the file named", input: "stack/prod.yml", files: map[string]string{"compose.yaml": "x: [", "stack/prod.yml": valid}, wantFile: "stack/prod.yml"},
		{name: "none", files: map[string]string{"README": "x"}, wantErr: "no compose file in the restored workspace (looked for compose.yaml, compose.yml, docker-compose.yml, docker-compose.yaml)"},
		{name: "the named one missing", input: "prod.yml", files: map[string]string{"compose.yaml": valid}, wantErr: "(looked for prod.yml)"},
		{name: "invalid", files: map[string]string{"compose.yml": "services: [unclosed"}, wantErr: "compose file compose.yml is not valid"},
		{name: "outside the workspace", input: "../compose.yaml", wantErr: "input compose_file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws := t.TempDir()
			for name, content := range c.files {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, name)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			sb := &backends.Sandbox{ID: backends.NewID(), WorkspaceDir: ws}
			sb.ComposeProject = ProjectName(sb.ID)
			out, err := restoredProject(ctx, h, sb, compose, c.input)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sb.ComposeFile != c.wantFile {
				t.Errorf("compose file %q, want %q", sb.ComposeFile, c.wantFile)
			}
			st, err := projectFromHost(out)
			services, networks := st.plan.Services, st.networks
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if strings.Join(services, ",") != "db,web" || strings.Join(networks, ",") != "back,default" {
				t.Errorf("services %v, networks %v; want [db web], [back default]", services, networks)
			}
		})
	}
}
