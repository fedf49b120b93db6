package backends

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// scripted is a directory extension whose host status script is given.
type scripted struct {
	DirWorkspace
	script string
}

func (s scripted) HostStatusScript(context.Context, *hosts.Host) (string, error) {
	return s.script, nil
}

// A host view and a record read by a real sh: records and names are data,
// even where they look like the old "=== " markers or another command's
// frames, and an extension whose script fails has no status output.
func TestReadHostKeepsDataThatLooksLikeFrames(t *testing.T) {
	h := &hosts.Host{Transport: &hosts.Local{Name: "local"}, RootDir: t.TempDir(), Local: true}
	other := hosts.NewMark()
	forged := fmt.Sprintf("{\n=== names\n=== record evil\n%s section record evil\n%s result %s\n}", other, other, viewNoRoot)
	for name, data := range map[string]string{".sandboxer/sandboxes/aaa.json": forged, ".sandboxer/sandboxes/bbb.json": "{}\n", "aaa/x": "", "=== record evil/x": ""} {
		if err := hosts.WriteFile(t.Context(), h, h.Path(name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	reg := NewRegistry(DirWorkspace{Ext: "ext.dir"}, scripted{DirWorkspace{Ext: "ext.broken"}, "echo partial; false"},
		scripted{DirWorkspace{Ext: "ext.listed"}, `(printf 'sbx-aaa|web|running\n=== ext-failed ext.listed\n')`})
	v, err := reg.readHost(t.Context(), h)
	root, _ := filepath.EvalSymlinks(h.RootDir)
	want := &hostView{root: root, records: map[string][]byte{"aaa": []byte(forged), "bbb": []byte("{}\n")},
		names: map[string]bool{".sandboxer": true, "aaa": true, "=== record evil": true},
		ext:   map[string]string{"ext.dir": "\n", "ext.listed": "sbx-aaa|web|running\n=== ext-failed ext.listed\n"}}
	if err != nil || !reflect.DeepEqual(v, want) {
		t.Fatalf("view %v\n%#v\nwant\n%#v", err, v, want)
	}
	if got, err := readRecordData(t.Context(), h, "aaa"); err != nil || got.root != root || string(got.records["aaa"]) != forged {
		t.Fatalf("readRecordData: %+v %v", got, err)
	}
	if _, err := parseHostView(hosts.Reply{Sections: []hosts.Section{{Kind: viewRoot, Body: []byte("relative\n")}}}); err == nil {
		t.Error("parseHostView accepted a relative root directory")
	}
}

// A record removed while the host's records are read (a teardown beside
// the read) is gone, not an error: one removed once opened is still read
// whole (a `cat` on the PATH removes the file it reads before reading
// it), one named but no longer there does not open and is skipped, and
// what is there but no regular file (a fifo, which would block) is
// skipped too.
func TestARecordRemovedDuringTheReadIsGone(t *testing.T) {
	h := &hosts.Host{Transport: &hosts.Local{Name: "local"}, RootDir: t.TempDir(), Local: true}
	for _, id := range []string{"aaa", "bbb"} {
		if err := hosts.WriteFile(t.Context(), h, recordPath(h, id), []byte(`{"id":"`+id+`"}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	bin := t.TempDir()
	// Removes the file it was given, by name or as its input, then reads it.
	wrapper := `#!/bin/sh
if [ $# -gt 0 ]; then for f in "$@"; do case $f in -*) ;; *) rm -f -- "$f";; esac; done
else rm -f -- "$(readlink /proc/self/fd/0)"; fi
exec /bin/cat "$@"
`
	if err := os.WriteFile(filepath.Join(bin, "cat"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	if err := syscall.Mkfifo(recordPath(h, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}

	v, err := readRecordFiles(t.Context(), h, hosts.Quote(recordPath(h, "aaa"))+" "+hosts.Quote(recordPath(h, "gone"))+" "+
		hosts.Quote(recordPath(h, "fifo"))+" "+hosts.Quote(recordPath(h, "bbb")))
	if err != nil {
		t.Fatalf("records removed during the read failed it: %v", err)
	}
	want := map[string][]byte{"aaa": []byte(`{"id":"aaa"}`), "bbb": []byte(`{"id":"bbb"}`)}
	if !reflect.DeepEqual(v.records, want) {
		t.Fatalf("records read %q, want %q", v.records, want)
	}
	for _, id := range []string{"aaa", "bbb"} {
		if _, err := os.Stat(recordPath(h, id)); !os.IsNotExist(err) {
			t.Fatalf("the wrapper did not remove record %s before reading it: %v", id, err)
		}
	}
}
