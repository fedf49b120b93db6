package composek8s_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/schema"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/composek8s"
)

// Every key a compose service may have (the compose specification's
// schema, as compose-go validates files against it) is in the table: none
// is dropped without a word.
func TestTableHasEveryServiceKeyOfTheSpecification(t *testing.T) {
	var spec struct {
		Definitions struct {
			Service struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"service"`
		} `json:"definitions"`
	}
	if err := json.Unmarshal([]byte(schema.Schema), &spec); err != nil {
		t.Fatal(err)
	}
	if len(spec.Definitions.Service.Properties) < 50 {
		t.Fatalf("read %d service keys from the schema", len(spec.Definitions.Service.Properties))
	}
	table := map[string]bool{}
	for _, k := range composek8s.ServiceKeys {
		if table[k.Name] {
			t.Errorf("%q is in the table twice", k.Name)
		}
		table[k.Name] = true
	}
	for key := range spec.Definitions.Service.Properties {
		if !table[key] {
			t.Errorf("service key %q is not in the table", key)
		}
	}
	for key := range table {
		if _, ok := spec.Definitions.Service.Properties[key]; !ok {
			t.Errorf("the table has %q, which the specification does not", key)
		}
	}
}

// design.md's table of the conversion is ServiceKeys, row for row.
func TestDesignListsEveryKey(t *testing.T) {
	data, err := os.ReadFile("../../../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range composek8s.ServiceKeys {
		row := "| `" + k.Name + "` | " + string(k.Does) + " | " + k.What + " |"
		if !strings.Contains(string(data), row) {
			t.Errorf("design.md has no row\n%s", row)
		}
	}
}
