package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// treeOf lists everything under root with its mode, size and mtime: two
// equal listings mean nothing was created, removed or written (a file
// added or removed also changes its directory's mtime).
func treeOf(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == root {
			b.WriteString("<absent>\n")
			return nil
		}
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v %d %d\n", p, info.Mode(), info.Size(), info.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// checkReadsNotFound runs the three read-only operations against a store
// without snapshots s1 and s2.
func checkReadsNotFound(t *testing.T, c *Client, h *hosts.Host) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.Get(ctx, h, "s1"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("get: want not found, got %v", err)
	}
	if list, err := c.List(ctx, h); err != nil || list == nil || len(list) != 0 {
		t.Fatalf("list: want an empty list, got %v, %v", list, err)
	}
	if _, err := c.Diff(ctx, h, "s1", "s2"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("diff: want not found, got %v", err)
	}
}

// A plan reads snapshots; on a host with no store (or an empty one) that
// must answer "none" and leave the host exactly as it was: no store
// created, no agent installed.
func TestReadsOfAMissingStoreWriteNothing(t *testing.T) {
	ssh := testharness.SSHHost(t)
	cases := map[string]*hosts.Host{
		"ssh, fresh root dir": ssh,
		"ssh, no root dir":    {Transport: ssh.Transport, RootDir: filepath.Join(t.TempDir(), "absent")},
		"ssh, empty store":    {Transport: ssh.Transport, RootDir: t.TempDir()},
		"local":               testharness.LocalHost(t),
	}
	if _, err := checkpoint.Open(StoreDir(cases["ssh, empty store"])); err != nil {
		t.Fatal(err)
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			parent := filepath.Dir(h.RootDir)
			before := treeOf(t, parent)
			checkReadsNotFound(t, NewClient(), h)
			if after := treeOf(t, parent); after != before {
				t.Fatalf("reads changed the host:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			if _, err := os.Stat(h.Path(".sandboxer", "bin")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("reads installed an agent: %v", err)
			}
		})
	}
}

// captureTwo makes snapshots s1 and s2 (with env) of a workspace on h
// through the agent, and returns what the agent itself answers for them.
func captureTwo(t *testing.T, h *hosts.Host) (s1, s2 checkpoint.Summary, diff checkpoint.Diff) {
	t.Helper()
	ctx := context.Background()
	ws := t.TempDir()
	write := func(rel, content string) {
		if err := os.WriteFile(filepath.Join(ws, rel), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt", "alpha")
	write("b.txt", "beta")
	write(".env", "TOKEN=one\nKEEP=same\n")
	c := NewClient()
	now := time.Now().UTC().Truncate(time.Second)
	var err error
	if s1, err = c.Snapshot(ctx, h, ws, nil, checkpoint.CaptureOptions{ID: "s1", Name: "first", IncludeEnv: true, Now: now}); err != nil {
		t.Fatal(err)
	}
	write("a.txt", "alpha, changed")
	if err := os.Remove(filepath.Join(ws, "b.txt")); err != nil {
		t.Fatal(err)
	}
	write("c.txt", "gamma")
	write(".env", "TOKEN=two\nKEEP=same\nNEW=x\n")
	if s2, err = c.Snapshot(ctx, h, ws, nil, checkpoint.CaptureOptions{ID: "s2", Name: "second", IncludeEnv: true, Now: now.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	// The reference diff is the store's own, read where the agent wrote it
	// (the harness's hosts share this machine's filesystem).
	store, err := checkpoint.Open(StoreDir(h))
	if err != nil {
		t.Fatal(err)
	}
	if diff, err = store.Diff("s1", "s2"); err != nil {
		t.Fatal(err)
	}
	return s1, s2, diff
}

// After captures, the reads answer what the agent answers, without the
// agent (it is removed first) and without writing anything.
func TestReadsAfterACaptureMatchTheAgentAndWriteNothing(t *testing.T) {
	for name, h := range map[string]*hosts.Host{"ssh": testharness.SSHHost(t), "local": testharness.LocalHost(t)} {
		t.Run(name, func(t *testing.T) {
			s1, s2, wantDiff := captureTwo(t, h)
			if err := os.RemoveAll(h.Path(".sandboxer", "bin")); err != nil {
				t.Fatal(err)
			}
			before := treeOf(t, h.RootDir)
			ctx := context.Background()
			c := NewClient()

			if got, err := c.Get(ctx, h, "s1"); err != nil || !reflect.DeepEqual(got, s1) {
				t.Fatalf("get: got %+v, %v; want %+v", got, err, s1)
			}
			list, err := c.List(ctx, h)
			if err != nil || !reflect.DeepEqual(list, []checkpoint.Summary{s1, s2}) {
				t.Fatalf("list: got %+v, %v; want s1 then s2", list, err)
			}
			d, err := c.Diff(ctx, h, "s1", "s2")
			if err != nil || !reflect.DeepEqual(d, wantDiff) {
				t.Fatalf("diff: got %+v, %v; want the agent's %+v", d, err, wantDiff)
			}
			if len(d.FilesAdded) != 1 || len(d.FilesRemoved) != 1 || len(d.FilesModified) != 1 ||
				!reflect.DeepEqual(d.EnvModified, []string{"TOKEN"}) || !reflect.DeepEqual(d.EnvAdded, []string{"NEW"}) {
				t.Fatalf("diff: %+v", d)
			}
			if d, err := c.Diff(ctx, h, "s2", "s2"); err != nil || len(d.FilesAdded)+len(d.FilesModified)+len(d.FilesRemoved)+len(d.EnvModified) != 0 {
				t.Fatalf("self diff: %+v, %v", d, err)
			}
			if _, err := c.Diff(ctx, h, "s1", "s3"); !errors.Is(err, checkpoint.ErrNotFound) || !strings.Contains(err.Error(), "s3") {
				t.Fatalf("diff with a missing snapshot: want not found naming s3, got %v", err)
			}
			if _, err := c.Get(ctx, h, "../s1"); err == nil || errors.Is(err, checkpoint.ErrNotFound) {
				t.Fatalf("get of an id that is no file name: want refused, got %v", err)
			}

			if after := treeOf(t, h.RootDir); after != before {
				t.Fatalf("reads changed the host:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// A manifest or env file changed on the host fails verification; it is
// never trusted, and the other snapshots still read.
func TestReadsRefuseATamperedStore(t *testing.T) {
	h := testharness.SSHHost(t)
	captureTwo(t, h)
	ctx := context.Background()
	c := NewClient()
	snapshots := filepath.Join(StoreDir(h), checkpoint.SnapshotsDir)
	tamper := func(t *testing.T, file, old, new string) {
		t.Helper()
		p := filepath.Join(snapshots, file)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		plain := data
		if checkpoint.IsManifestFile(file) {
			// Stored packed: changed as the plain JSON older stores hold,
			// which reads the same.
			m, err := checkpoint.ParseManifest(strings.TrimSuffix(file, ".json"), data)
			if err != nil {
				t.Fatal(err)
			}
			if plain, err = json.Marshal(m); err != nil {
				t.Fatal(err)
			}
		}
		changed := bytes.Replace(plain, []byte(old), []byte(new), 1)
		if bytes.Equal(changed, plain) || len(changed) != len(plain) {
			t.Fatalf("%s holds no %q to change a byte of", file, old)
		}
		if err := os.WriteFile(p, changed, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { // the next subtests read the untampered store
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Errorf("unable to undo the tampering of %s: %v", file, err)
			}
		})
	}
	refused := func(t *testing.T, err error, want string) {
		t.Helper()
		if err == nil || errors.Is(err, checkpoint.ErrNotFound) || !strings.Contains(err.Error(), want) {
			t.Fatalf("want an error saying %q, got %v", want, err)
		}
	}

	t.Run("manifest", func(t *testing.T) {
		tamper(t, "s1.json", `"size":5`, `"size":6`) // a.txt, "alpha"
		_, err := c.Get(ctx, h, "s1")
		refused(t, err, "manifest is corrupt")
		_, err = c.List(ctx, h)
		refused(t, err, "manifest is corrupt")
		_, err = c.Diff(ctx, h, "s1", "s2")
		refused(t, err, "manifest is corrupt")
		if _, err := c.Get(ctx, h, "s2"); err != nil {
			t.Fatalf("an intact snapshot beside a tampered one: %v", err)
		}
	})
	t.Run("packed", func(t *testing.T) {
		// One character of the packed manifest changed, in the middle of
		// its compressed entries.
		p := filepath.Join(snapshots, "s1.json")
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		changed := bytes.Clone(data)
		i := len(changed) / 2
		changed[i] = map[bool]byte{true: 'B', false: 'A'}[changed[i] == 'A']
		if err := os.WriteFile(p, changed, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Errorf("unable to undo the tampering of s1.json: %v", err)
			}
		})
		_, err = c.Get(ctx, h, "s1")
		refused(t, err, "manifest is corrupt")
		_, err = c.List(ctx, h)
		refused(t, err, "manifest is corrupt")
	})
	t.Run("NUL byte", func(t *testing.T) {
		tamper(t, "s1.json", `"name":"first"`, "\"name\":\"fir\x00t\"")
		_, err := c.Get(ctx, h, "s1")
		refused(t, err, "NUL")
		_, err = c.List(ctx, h)
		refused(t, err, "NUL")
	})
	t.Run("renamed", func(t *testing.T) {
		// s1's manifest, intact, under the name of a snapshot s3: its digest
		// checks out, but it is not s3's and is refused naming the file.
		data, err := os.ReadFile(filepath.Join(snapshots, "s1.json"))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(snapshots, "s3.json")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { // the next subtests read the store without it
			if err := os.Remove(p); err != nil {
				t.Errorf("unable to remove the renamed manifest: %v", err)
			}
		})
		_, err = c.Get(ctx, h, "s3")
		refused(t, err, `manifest s3.json holds snapshot "s1"`)
		_, err = c.List(ctx, h)
		refused(t, err, `manifest s3.json holds snapshot "s1"`)
		_, err = c.Diff(ctx, h, "s1", "s3")
		refused(t, err, `manifest s3.json holds snapshot "s1"`)
		if got, err := c.Get(ctx, h, "s1"); err != nil || got.ID != "s1" {
			t.Fatalf("s1 beside its renamed copy: %+v, %v", got, err)
		}
		ms, err := c.ReadManifests(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		_, err = ms.Get("s3")
		refused(t, err, `manifest s3.json holds snapshot "s1"`)
		if _, err := ms.Get("s1"); err != nil {
			t.Fatalf("a shared read: s1 beside its renamed copy: %v", err)
		}
	})
	t.Run("env", func(t *testing.T) {
		tamper(t, "s1.env", "one", "onf")
		if _, err := c.Get(ctx, h, "s1"); err != nil {
			t.Fatalf("get reads no env: %v", err)
		}
		_, err := c.Diff(ctx, h, "s1", "s2")
		refused(t, err, "captured env is corrupt")
	})
}
