package provider

import (
	"iter"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
)

// The sandbox list's filters: every one given must match; labels by key
// and value, all of them.
func TestSandboxListFilters(t *testing.T) {
	info := backends.SandboxInfo{
		Sandbox: &backends.Sandbox{ID: "3f9c2a7b1d0e", Profile: "profile.workspace", Labels: map[string]string{"team": "a", "env": "ci"}},
		Status:  backends.Status{State: backends.StatusReady},
	}
	all := sandboxListModel{Host: types.StringNull(), Profile: types.StringNull(), Labels: types.MapNull(types.StringType),
		Status: types.StringNull(), Expired: types.BoolNull()}
	cases := []struct {
		name   string
		change func(*sandboxListModel)
		labels map[string]string
		want   bool
	}{
		{"no filter", func(*sandboxListModel) {}, nil, true},
		{"profile", func(m *sandboxListModel) { m.Profile = types.StringValue("profile.workspace") }, nil, true},
		{"other profile", func(m *sandboxListModel) { m.Profile = types.StringValue("profile.compose-e2e") }, nil, false},
		{"status", func(m *sandboxListModel) { m.Status = types.StringValue("ready") }, nil, true},
		{"other status", func(m *sandboxListModel) { m.Status = types.StringValue("stopped") }, nil, false},
		{"not expired", func(m *sandboxListModel) { m.Expired = types.BoolValue(false) }, nil, true},
		{"expired", func(m *sandboxListModel) { m.Expired = types.BoolValue(true) }, nil, false},
		{"labels", func(*sandboxListModel) {}, map[string]string{"team": "a", "env": "ci"}, true},
		{"a label's value", func(*sandboxListModel) {}, map[string]string{"team": "b"}, false},
		{"a label it lacks", func(*sandboxListModel) {}, map[string]string{"owner": ""}, false},
	}
	for _, c := range cases {
		m := all
		c.change(&m)
		if got := m.matches(info, c.labels); got != c.want {
			t.Errorf("%s: matches = %v, want %v", c.name, got, c.want)
		}
	}
}

// The snapshot lists' filters (the list resource's, the data source's): the
// sandbox exactly, the name as a part.
func TestSnapshotListFilters(t *testing.T) {
	s := checkpoint.Summary{ID: "snap-1", SandboxID: "3f9c2a7b1d0e", Name: "before-upgrade", CreatedAt: time.Now()}
	for _, c := range []struct {
		sandbox, name string
		want          bool
	}{
		{"", "", true}, {"3f9c2a7b1d0e", "", true}, {"3f9c2a7b1d0f", "", false},
		{"", "upgrade", true}, {"", "after", false}, {"3f9c2a7b1d0e", "before", true},
	} {
		f := snapshotFilter{SandboxID: types.StringValue(c.sandbox), Name: types.StringValue(c.name)}
		if got := f.matches(s); got != c.want {
			t.Errorf("sandbox %q name %q: matches = %v, want %v", c.sandbox, c.name, got, c.want)
		}
	}
}

// A stream stops at its limit, and after a result carrying an error (the
// hosts after it are never read).
func TestListLimited(t *testing.T) {
	read := 0
	results := func(push func(list.ListResult) bool) {
		for i := 0; i < 5; i++ {
			read++
			var d diag.Diagnostics
			if i == 3 {
				d.AddError("host down", "")
			}
			if !push(list.ListResult{Diagnostics: d}) {
				return
			}
		}
	}
	count := func(s iter.Seq[list.ListResult]) (n int) {
		for range s {
			n++
		}
		return n
	}
	if n := count(limited(2, results)); n != 2 || read != 2 {
		t.Errorf("limit 2: %d results, %d read", n, read)
	}
	read = 0
	if n := count(limited(0, results)); n != 4 || read != 4 {
		t.Errorf("no limit: %d results (the 4th an error), %d read", n, read)
	}
}
