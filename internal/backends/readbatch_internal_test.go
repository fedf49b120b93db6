package backends

import "testing"

func TestParseHostView(t *testing.T) {
	out := "/srv/sbx\n" +
		"=== record aaa\n{\n  \"id\": \"aaa\"\n}\n\n" +
		"=== record bbb\n{\n  \"id\": \"bbb\"\n}\n\n" +
		"=== ext ext.compose-ssh\nsbx-aaa|web|running|Up 2 minutes\n" +
		"=== ext ext.broken\npartial\n=== ext-failed ext.broken\n" +
		"=== ext ext.vm-packer\n" +
		"=== names\naaa\n=== record evil\n.sandboxer\n"
	v, err := parseHostView(out)
	if err != nil {
		t.Fatal(err)
	}
	if v.root != "/srv/sbx" || len(v.records) != 2 || string(v.records["aaa"]) != "{\n  \"id\": \"aaa\"\n}\n\n" {
		t.Errorf("root %q, records %q", v.root, v.records)
	}
	if v.ext["ext.compose-ssh"] != "sbx-aaa|web|running|Up 2 minutes\n" {
		t.Errorf("compose section %q", v.ext["ext.compose-ssh"])
	}
	if _, ok := v.ext["ext.broken"]; ok {
		t.Error("a failed extension script's output was kept")
	}
	if out, ok := v.ext["ext.vm-packer"]; !ok || out != "" {
		t.Errorf("an extension with no script: %q %v", out, ok)
	}
	// After the names marker every line is a name, even one that looks
	// like a marker: names in the root directory cannot forge records.
	if !v.names["aaa"] || !v.names["=== record evil"] || !v.names[".sandboxer"] || v.records["evil"] != nil {
		t.Errorf("names %v, records %q", v.names, v.records)
	}
	for _, bad := range []string{"", "relative/root\n=== names\n", "/srv/sbx\n=== record aaa\n{}\n"} {
		if _, err := parseHostView(bad); err == nil {
			t.Errorf("parseHostView(%q) succeeded", bad)
		}
	}
}
