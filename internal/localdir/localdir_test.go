package localdir

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestHashChangesWithContentNotMtime(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "compose.yaml"), "services: {}\n")
	write(t, filepath.Join(dir, "app", "main.sh"), "echo hi\n")
	h1, err := Hash(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Rewriting identical content keeps the hash.
	write(t, filepath.Join(dir, "app", "main.sh"), "echo hi\n")
	if h2, _ := Hash(dir); h2 != h1 {
		t.Fatalf("identical content hashed differently: %s vs %s", h1, h2)
	}
	write(t, filepath.Join(dir, "app", "main.sh"), "echo bye\n")
	h3, _ := Hash(dir)
	if h3 == h1 {
		t.Fatal("edited file did not change the hash")
	}
	if err := os.Chmod(filepath.Join(dir, "app", "main.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if h4, _ := Hash(dir); h4 == h3 {
		t.Fatal("mode change did not change the hash")
	}
	if err := os.Symlink("main.sh", filepath.Join(dir, "app", "link")); err != nil {
		t.Fatal(err)
	}
	h5, _ := Hash(dir)
	if err := os.Remove(filepath.Join(dir, "app", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("other.sh", filepath.Join(dir, "app", "link")); err != nil {
		t.Fatal(err)
	}
	if h6, _ := Hash(dir); h6 == h5 {
		t.Fatal("symlink target change did not change the hash")
	}
}

func TestWriteTarKeepsSymlinksAsLinks(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.txt"), "A")
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteTar(&buf, dir); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(&buf)
	seen := map[string]*tar.Header{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		seen[hdr.Name] = hdr
	}
	if h := seen["escape"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "/etc/passwd" {
		t.Fatalf("symlink not stored as a link: %+v", h)
	}
	if h := seen["a.txt"]; h == nil || h.Size != 1 {
		t.Fatalf("regular file missing: %+v", h)
	}
}

// A repo that is a symlink to a directory is the tree it points to; links
// inside the tree stay links.
func TestSymlinkedRootIsFollowedInnerLinksKept(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "apps", "web")
	write(t, filepath.Join(real, "docker-compose.yml"), "services: {}\n")
	if err := os.Symlink("docker-compose.yml", filepath.Join(real, "compose-link.yml")); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "web")
	if err := os.Symlink(filepath.Join("apps", "web"), link); err != nil {
		t.Fatal(err)
	}
	hReal, err := Hash(real)
	if err != nil {
		t.Fatal(err)
	}
	if hLink, err := Hash(link); err != nil || hLink != hReal {
		t.Fatalf("hash through the link = %s, %v; of the tree = %s", hLink, err, hReal)
	}
	var buf bytes.Buffer
	if err := WriteTar(&buf, link); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	tr := tar.NewReader(&buf)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[hdr.Name] = string(hdr.Typeflag) + hdr.Linkname
	}
	want := map[string]string{"docker-compose.yml": string(tar.TypeReg), "compose-link.yml": string(tar.TypeSymlink) + "docker-compose.yml"}
	if len(got) != len(want) || got["docker-compose.yml"] != want["docker-compose.yml"] || got["compose-link.yml"] != want["compose-link.yml"] {
		t.Fatalf("tar of the linked repo holds %v, want %v", got, want)
	}
}
