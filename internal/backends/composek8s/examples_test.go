package composek8s_test

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/composek8s"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/composefile"
)

// The 39 stacks of docker/awesome-compose (CC0; testdata/awesome-compose,
// their compose files and the files they name), converted as
// a plan converts them: which convert, and why each of the others cannot
// run on a cluster. A change in the conversion that turns away a stack it
// took, or takes one for another reason, fails here.

// refusals are the kinds of refusal, by what their message says.
var refusals = []struct{ kind, pattern string }{
	{"build without image", "has `build` and no `image`"},
	{"a path of the node", "a pod reaches no path of a node"},
	{"network_mode", "`network_mode` cannot run on a cluster"},
	{"runtime", "`runtime` cannot run on a cluster"},
	{"a fixed address", "a fixed address on network"},
	{"a user by name", "a cluster takes numeric ids only"},
}

// exampleStacks is each stack's refusals; none: it converts.
var exampleStacks = map[string][]string{
	"angular":                       {"build without image"},
	"apache-php":                    {"build without image"},
	"aspnet-mssql":                  {"build without image"},
	"django":                        {"build without image"},
	"elasticsearch-logstash-kibana": nil,
	"fastapi":                       {"build without image"},
	"flask":                         {"build without image"},
	"flask-redis":                   {"build without image"},
	"gitea-postgres":                nil,
	"minecraft":                     {"a path of the node"},
	"nextcloud-postgres":            nil,
	"nextcloud-redis-mariadb":       nil,
	"nginx-aspnet-mysql":            {"build without image"},
	"nginx-flask-mongo":             {"build without image"},
	"nginx-flask-mysql":             {"build without image"},
	"nginx-golang":                  {"build without image"},
	"nginx-golang-mysql":            {"build without image"},
	"nginx-golang-postgres":         {"a user by name", "build without image"},
	"nginx-nodejs-redis":            {"build without image"},
	"nginx-wsgi-flask":              {"build without image"},
	"pihole-cloudflared-DoH":        {"a fixed address", "a path of the node"},
	"plex":                          {"a path of the node", "network_mode"},
	"portainer":                     {"a path of the node"},
	"postgresql-pgadmin":            nil,
	"prometheus-grafana":            nil,
	"react-express-mongodb":         {"build without image"},
	"react-express-mysql":           {"build without image"},
	"react-java-mysql":              {"build without image"},
	"react-nginx":                   {"build without image"},
	"react-rust-postgres":           {"build without image"},
	"sparkjava":                     {"build without image"},
	"sparkjava-mysql":               {"build without image"},
	"spring-postgres":               {"build without image"},
	"traefik-golang":                {"a path of the node", "build without image"},
	"vuejs":                         {"build without image"},
	"wasmedge-kafka-mysql":          {"runtime"},
	"wasmedge-mysql-nginx":          {"runtime"},
	"wireguard":                     {"a path of the node"},
	"wordpress-mysql":               nil,
}

func TestExampleStacksOnACluster(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("testdata", "awesome-compose"))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var stacks []string
	for _, e := range entries {
		if e.IsDir() {
			stacks = append(stacks, e.Name())
		}
	}
	if want := slices.Sorted(maps.Keys(exampleStacks)); !slices.Equal(stacks, want) {
		t.Fatalf("the stacks in testdata: %v\nwant %v", stacks, want)
	}
	converted, tally := 0, map[string]int{}
	for _, name := range stacks {
		l, err := composefile.Load(map[string]string{"repo": filepath.Join(root, name)}, nil)
		if err != nil {
			t.Errorf("%s: compose-go does not load it: %v", name, err)
			continue
		}
		_, err = composek8s.Convert(l, composek8s.Options{ID: "000000000000", NamespacePrefix: "sbx", FreePorts: true})
		var got []string
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				i := slices.IndexFunc(refusals, func(r struct{ kind, pattern string }) bool { return strings.Contains(line, r.pattern) })
				if i < 0 {
					t.Errorf("%s: a refusal of no known kind: %s", name, line)
					continue
				}
				if !slices.Contains(got, refusals[i].kind) {
					got = append(got, refusals[i].kind)
				}
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, exampleStacks[name]) {
			t.Errorf("%s: refused for %q, want %q (%v)", name, got, exampleStacks[name], err)
		}
		if len(got) == 0 {
			converted++
		}
		for _, k := range got {
			tally[k]++
		}
	}
	t.Logf("%d of %d stacks convert; refused, by kind (a stack may have several): %v", converted, len(stacks), tally)
}
