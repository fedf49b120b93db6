package agent

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
)

// Named volumes of a compose sandbox are read and written where docker
// keeps them, which the host's user may not read (volume data belongs to
// the users the services run as). The agent on the host therefore runs a
// helper container per volume: an empty image (imported once, nothing
// pulled), this same agent binary mounted read-only as its entrypoint, the
// volume at /v and the store at /store (read-only for a restore). Inside,
// the agent runs as root; what it adds to the store it gives to the
// store's owner (checkpoint.StoreOwner). The manifest is written outside,
// by the agent as the host's user, once every part is captured.
//
// An agent that runs as root next to the engine (a root SSH user; the
// docker CLI talks to this machine's engine) reads and writes a local
// volume's directory itself: a helper container costs ~0.3 s of the
// engine's time per volume, the larger part of an incremental capture.

// Volumes says which docker volumes of a compose project a capture takes,
// or which project a restore writes a snapshot's volumes into.
type Volumes struct {
	// Project is the compose project: its volumes carry the label
	// com.docker.compose.project=<Project>.
	Project string `json:"project"`
	// Names limits a capture to these compose volume names (nil: all).
	Names []string `json:"names,omitempty"`
}

// Compose's labels on the volumes it creates.
const (
	labelProject = "com.docker.compose.project"
	labelVolume  = "com.docker.compose.volume"
)

// helperImage is the empty image helpers run: no registry is needed.
const helperImage = "sandboxer-volume-helper:1"

// helperLabel marks helper containers (`docker ps --filter label=...`).
const helperLabel = "dev.sandboxer.volume-helper"

// projectVolume is one docker volume of a project.
type projectVolume struct {
	Name       string // compose name, e.g. "db-data"
	Docker     string // docker's, e.g. "sbx-3f9c2a7b1d0e_db-data"
	Driver     string
	Mountpoint string // where the engine keeps its data
}

// listVolumes lists the volumes compose created for project.
func listVolumes(ctx context.Context, project string) ([]projectVolume, error) {
	out, err := docker(ctx, nil, "volume", "ls", "--filter", "label="+labelProject+"="+project,
		"--format", `{{.Name}}	{{.Label "`+labelVolume+`"}}	{{.Driver}}	{{.Mountpoint}}`)
	if err != nil {
		return nil, fmt.Errorf("unable to list the volumes of compose project %s: %w", project, err)
	}
	var vols []projectVolume
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimRight(line, "\r\n"), "\t")
		if len(f) != 4 || f[0] == "" || !checkpoint.VolumeNamePattern.MatchString(f[1]) {
			continue // not one compose made (no volume label): never captured
		}
		vols = append(vols, projectVolume{Name: f[1], Docker: f[0], Driver: f[2], Mountpoint: f[3]})
	}
	slices.SortFunc(vols, func(a, b projectVolume) int { return strings.Compare(a.Name, b.Name) })
	return vols, nil
}

// selectVolumes is the volumes a capture takes: all, or the names asked
// for, each of which must be one of the project's.
func selectVolumes(all []projectVolume, names []string) ([]projectVolume, error) {
	if names == nil {
		return all, nil
	}
	var out []projectVolume
	for _, n := range names {
		i := slices.IndexFunc(all, func(v projectVolume) bool { return v.Name == n })
		if i < 0 {
			var have []string
			for _, v := range all {
				have = append(have, v.Name)
			}
			return nil, fmt.Errorf("volume %q is not a volume of this sandbox (it has: %s)", n, strings.Join(have, ", "))
		}
		out = append(out, all[i])
	}
	return out, nil
}

// captureVolumes captures the project's volumes (vols.Names, or all) into
// the store at store, returning them for the manifest and the bytes they
// added. The caller holds the store's shared lock until the manifest is
// written.
func captureVolumes(ctx context.Context, store string, vols *Volumes, opts checkpoint.CaptureOptions) ([]checkpoint.Volume, int64, error) {
	all, err := listVolumes(ctx, vols.Project)
	if err != nil {
		return nil, 0, err
	}
	chosen, err := selectVolumes(all, vols.Names)
	if err != nil {
		return nil, 0, err
	}
	var (
		out    []checkpoint.Volume
		stored int64
		used   checkpoint.Usage
	)
	for _, v := range chosen {
		var cv checkpoint.CapturedVolume
		vopts := checkpoint.VolumeCaptureOptions{
			SandboxID: opts.SandboxID, Name: v.Name, Limits: opts.Limits, Used: used, Workers: opts.Workers, Done: opts.Done,
		}
		if dir := direct(v); dir != "" {
			if cv, err = (&checkpoint.Store{Dir: store}).CaptureVolume(dir, vopts); err != nil {
				return nil, 0, err
			}
		} else if err := helperDone(runHelper(ctx, "volume-capture", store, false, v.Docker, Request{Store: "/store", Workspace: "/v", VolumeCapture: vopts}, &cv)); err != nil {
			return nil, 0, err
		}
		used = used.Add(cv.Volume.Entries)
		out = append(out, cv.Volume)
		stored += cv.StoredBytes
	}
	return out, stored, nil
}

// restoreVolumes writes m's volumes into project's volumes of the same
// compose names, creating those that do not exist (labelled as compose
// labels its own, so compose adopts them and teardown removes them).
// Each helper verifies its volume's objects before changing it (the
// caller verifies them all first when writing over existing content).
// It returns once every volume is written; settle waits until the helper
// containers are gone (runHelper) and returns what failed then. The caller
// calls it, always (it is never nil); on error there is nothing to settle.
func restoreVolumes(ctx context.Context, s *checkpoint.Store, m *checkpoint.Manifest, project string, opts checkpoint.RestoreOptions) (res checkpoint.RestoreResult, settle func() error, err error) {
	var ends []func() error
	settle = func() error {
		var errs []error
		for _, end := range ends {
			errs = append(errs, end())
		}
		ends = nil
		return errors.Join(errs...)
	}
	defer func() {
		if err != nil {
			if serr := settle(); serr != nil {
				err = errors.Join(err, serr)
			}
			res = checkpoint.RestoreResult{}
		}
	}()
	existing, err := listVolumes(ctx, project)
	if err != nil {
		return res, settle, err
	}
	created := false
	for _, v := range m.Volumes {
		if !slices.ContainsFunc(existing, func(e projectVolume) bool { return e.Name == v.Name }) {
			if _, err := docker(ctx, nil, "volume", "create", "--label", labelProject+"="+project,
				"--label", labelVolume+"="+v.Name, project+"_"+v.Name); err != nil {
				return res, settle, fmt.Errorf("unable to create volume %s_%s: %w", project, v.Name, err)
			}
			created = true
		}
	}
	if created {
		if existing, err = listVolumes(ctx, project); err != nil {
			return res, settle, err
		}
	}
	for _, v := range m.Volumes {
		i := slices.IndexFunc(existing, func(e projectVolume) bool { return e.Name == v.Name })
		if i < 0 {
			return res, settle, fmt.Errorf("volume %s_%s was created but is not listed", project, v.Name)
		}
		var r checkpoint.RestoreResult
		vol := v
		ropts := checkpoint.RestoreOptions{Files: true, Overwrite: true, Prune: opts.Prune, Workers: opts.Workers, Done: opts.Done,
			Writeback: opts.Writeback}
		if dir := direct(existing[i]); dir != "" {
			if r, err = s.RestoreVolume(vol, dir, ropts); err != nil {
				return res, settle, err
			}
		} else {
			// Tearing the helper down waits until what it wrote is on
			// disk (0.25 s after an empty run, ~0.55 s after 512 MiB
			// left dirty): the caller's next steps overlap that.
			end, err := runHelper(ctx, "volume-restore", s.Dir, true, existing[i].Docker,
				Request{Store: "/store", Workspace: "/v", Volume: &vol, Restore: ropts}, &r)
			if err != nil {
				return res, settle, err
			}
			ends = append(ends, end)
		}
		res.FilesRestored += r.FilesRestored
		res.Pruned += r.Pruned
	}
	return res, settle, nil
}

// direct is the local directory of v's data when this agent reads and
// writes it itself (see above); "" when a helper container must.
func direct(v projectVolume) string {
	if os.Geteuid() != 0 || v.Driver != "local" || !filepath.IsAbs(v.Mountpoint) || !localEngine() {
		return ""
	}
	if st, err := os.Lstat(v.Mountpoint); err != nil || !st.IsDir() {
		return ""
	}
	return v.Mountpoint
}

// localEngine says whether the docker CLI talks to the engine on this
// machine: DOCKER_HOST unset or a unix socket, and no other context chosen
// (by DOCKER_CONTEXT or the CLI's config). Volume paths the engine reports
// are then paths here.
func localEngine() bool {
	if h := os.Getenv("DOCKER_HOST"); h != "" && !strings.HasPrefix(h, "unix://") {
		return false
	}
	if c := os.Getenv("DOCKER_CONTEXT"); c != "" && c != "default" {
		return false
	}
	dir := os.Getenv("DOCKER_CONFIG")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return false
		}
		dir = filepath.Join(home, ".docker")
	}
	data, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	var cfg struct {
		CurrentContext string `json:"currentContext"`
	}
	if err != nil || json.Unmarshal(data, &cfg) != nil {
		return false
	}
	return cfg.CurrentContext == "" || cfg.CurrentContext == "default"
}

// runHelper runs op of this agent in a helper container with docker
// volume vol at /v and the store at /store, req on its stdin (held open:
// EOF tells it the caller went away), and decodes its answer into out.
// It returns once the answer is in: end waits until the container is gone
// (the engine's teardown of it waits until what it wrote is on disk) and
// returns what failed then; the caller calls it, always. On error the
// helper is gone already.
func runHelper(ctx context.Context, op, store string, readOnlyStore bool, vol string, req Request, out any) (end func() error, err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("volume helper: unable to locate the agent: %w", err)
	}
	if self, err = filepath.EvalSymlinks(self); err != nil {
		return nil, fmt.Errorf("volume helper: unable to locate the agent: %w", err)
	}
	if store, err = filepath.Abs(store); err != nil {
		return nil, err
	}
	if err := ensureHelperImage(ctx); err != nil {
		return nil, err
	}
	storeMount := store + ":/store"
	if readOnlyStore {
		storeMount += ":ro"
	}
	args := []string{"run", "--rm", "-i", "--network", "none", "--user", "0:0", "--label", helperLabel + "=" + op,
		"--entrypoint", "/sandboxer-agent", "-v", self + ":/sandboxer-agent:ro", "-v", storeMount, "-v", vol + ":/v"}
	libs, err := libraryMounts(self)
	if err != nil {
		return nil, err
	}
	args = append(args, libs...)
	args = append(args, helperImage, Command, op)
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	// The request, then stdin held open until the helper is done (Wait
	// closes it once the process has exited).
	cmd := exec.CommandContext(ctx, "docker", args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("volume %s: docker run: %w", vol, err)
	}
	_, werr := stdin.Write(append(body, '\n'))
	// The answer is one JSON value, written once the work is done; the
	// helper writes nothing after it.
	derr := json.NewDecoder(stdout).Decode(out)
	end = func() error {
		_, _ = io.Copy(io.Discard, stdout) // read to its end before Wait, as Wait requires
		if err := cmd.Wait(); err != nil {
			return fmt.Errorf("volume %s: %s: %s", vol, op, lastLines(stderr.String()))
		}
		return nil
	}
	if derr == nil && werr == nil {
		return end, nil
	}
	if err := end(); err != nil {
		return nil, err
	}
	if werr != nil {
		return nil, fmt.Errorf("volume %s: %s: %w", vol, op, werr)
	}
	return nil, fmt.Errorf("volume %s: unreadable helper answer to %s: %w", vol, op, derr)
}

// helperDone waits for the helper runHelper started: its end, or its error.
func helperDone(end func() error, err error) error {
	if err != nil {
		return err
	}
	return end()
}

// ensureHelperImage imports the helper image, an empty file system, unless
// the engine has it: an empty tar archive is 1024 zero bytes.
func ensureHelperImage(ctx context.Context) error {
	if _, err := docker(ctx, nil, "image", "inspect", "--format", "{{.Id}}", helperImage); err == nil {
		return nil
	}
	if _, err := docker(ctx, bytes.NewReader(make([]byte, 1024)), "import", "--message", "sandboxer volume helper: empty", "-", helperImage); err != nil {
		return fmt.Errorf("unable to import the volume helper image %s: %w", helperImage, err)
	}
	return nil
}

// libraryMounts are the read-only mounts a dynamically linked agent (one
// built with cgo, as `go build` does by default) needs in the empty image:
// the host's library directories at their own paths. A static agent (the
// released ones, CGO_ENABLED=0) needs none.
func libraryMounts(binary string) ([]string, error) {
	f, err := elf.Open(binary)
	if err != nil {
		return nil, fmt.Errorf("volume helper: %s: %w", binary, err)
	}
	defer func() { _ = f.Close() }() // only read
	dynamic := slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP })
	if !dynamic {
		return nil, nil
	}
	var mounts []string
	for _, dir := range []string{"/lib", "/lib64", "/usr/lib", "/usr/lib64"} {
		real, err := filepath.EvalSymlinks(dir)
		if err != nil {
			continue // not on this host
		}
		mounts = append(mounts, "-v", real+":"+dir+":ro")
	}
	return mounts, nil
}

// docker runs the docker CLI with stdin, returning its stdout; a failure
// carries its stderr.
func docker(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return nil, fmt.Errorf("docker %s: %s", args[0], lastLines(stderr.String()))
	}
	if err != nil {
		return nil, fmt.Errorf("docker %s: %w", args[0], err)
	}
	return stdout.Bytes(), nil
}

// lastLines is the end of a command's stderr, enough to say what failed.
func lastLines(s string) string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.Join(lines, "\n")
}
