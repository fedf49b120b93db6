package provider

import (
	"testing"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/composessh"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/saasstub"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/swarm"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/vmattach"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
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
		ext, err := reg.Extension(name)
		if err != nil {
			t.Fatalf("%s is declared but not implemented: %v", name, err)
		}
		_, snap := ext.(backends.Snapshotter)
		if snap != decl.SupportsSnapshots {
			t.Errorf("%s: declared supports_snapshots=%v, implementation %v", name, decl.SupportsSnapshots, snap)
		}
	}
	for _, name := range []string{composessh.Name, swarm.Name, vmattach.Name, saasstub.Name} {
		if _, err := cat.Extension(name); err != nil {
			t.Errorf("%s is implemented but not declared", name)
		}
	}
}
