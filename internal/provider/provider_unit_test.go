package provider

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/composek8s"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/composessh"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/saasstub"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/swarm"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/vmattach"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// The extension declarations (ext.*.yaml) say what each extension can do;
// the Go implementations must agree, in both directions.
func TestExtensionDeclarationsMatchImplementations(t *testing.T) {
	cat, err := catalog.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	reg := newRegistry(composessh.New(""))
	for _, name := range cat.ExtensionNames() {
		decl, _ := cat.Extension(name)
		ext, err := reg.Validator(name)
		if err != nil {
			t.Fatalf("%s is declared but not implemented: %v", name, err)
		}
		_, snap := ext.(backends.Snapshotter)
		if snap != decl.SupportsSnapshots {
			t.Errorf("%s: declared supports_snapshots=%v, implementation %v", name, decl.SupportsSnapshots, snap)
		}
	}
	for _, name := range []string{composessh.Name, composek8s.Name, swarm.Name, vmattach.Name, saasstub.Name} {
		if _, err := cat.Extension(name); err != nil {
			t.Errorf("%s is implemented but not declared", name)
		}
	}
}

// max_network_operations below 1 is refused when the configuration is
// validated, before any host is touched; 1 and up plan.
func TestUnitProvider_maxNetworkOperations(t *testing.T) {
	requireCLI(t)
	root := t.TempDir()
	config := func(n int) string {
		return fmt.Sprintf(`
provider "sandboxer" {
  host {
    name                   = "a"
    local                  = true
    root_dir               = %q
    max_network_operations = %d
  }
}
resource "sandboxer_sandbox" "s" {
  profile = "profile.workspace"
  host    = "a"
}`, root, n)
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		Steps: []resource.TestStep{
			{Config: config(0), PlanOnly: true, ExpectError: regexp.MustCompile(`(?s)max_network_operations.*must be at least 1`)},
			{Config: config(1), PlanOnly: true, ExpectNonEmptyPlan: true},
		},
	})
	rootStaysEmpty(t, root)
}

// Configure warms the host a walk most likely reaches: the default host,
// else the only one declared; never local, never one of several.
func TestUnitProvider_likelyHost(t *testing.T) {
	ssh := func(name string) *hosts.Host {
		tr, err := hosts.NewSSH(hosts.SSHConfig{Name: name, Address: "127.0.0.1:22", User: "u", UseAgent: true, InsecureIgnoreHostKey: true})
		if err != nil {
			t.Fatal(err)
		}
		return &hosts.Host{Transport: tr}
	}
	local := localHost(catalog.LocalHost, t.TempDir())
	a, b := ssh("a"), ssh("b")
	for _, c := range []struct {
		name        string
		hosts       map[string]*hosts.Host
		defaultHost string
		want        *hosts.Host
	}{
		{"only local", map[string]*hosts.Host{"local": local}, "", nil},
		{"one SSH host", map[string]*hosts.Host{"local": local, "a": a}, "", a},
		{"two, no default", map[string]*hosts.Host{"local": local, "a": a, "b": b}, "", nil},
		{"two, default b", map[string]*hosts.Host{"local": local, "a": a, "b": b}, "b", b},
		{"default local", map[string]*hosts.Host{"local": local, "a": a}, "local", nil},
		{"default a cluster", map[string]*hosts.Host{"local": local, "a": a}, "k8s", nil},
	} {
		d := &providerData{hosts: c.hosts, defaultHost: c.defaultHost}
		if got := d.likelyHost(); got != c.want {
			t.Errorf("%s: likely host %v, want %v", c.name, got, c.want)
		}
	}
}
