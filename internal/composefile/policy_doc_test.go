package composefile

import (
	"os"
	"strings"
	"testing"
)

// The guide's table of controls is Controls, row for row: the docs say
// what the code refuses.
func TestPolicyGuideListsEveryControl(t *testing.T) {
	data, err := os.ReadFile("../../templates/guides/untrusted.md.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	guide := string(data)
	for _, c := range Controls {
		row := "| " + string(c.Level) + " | `" + c.Keys + "` | " + c.What + " |"
		if !strings.Contains(guide, row) {
			t.Errorf("the guide has no row\n%s", row)
		}
	}
}
