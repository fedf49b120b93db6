package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// RunIfRequested turns this process into the agent when it was started as
// one (`<binary> __sandboxer_agent OP`). main and test binaries call it first.
func RunIfRequested() {
	if len(os.Args) > 1 && os.Args[1] == Command {
		os.Exit(Main(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
}

// StoreDir is where a host's checkpoint store lives.
func StoreDir(h *hosts.Host) string { return h.Path(".sandboxer", "store") }

// Client runs agent operations on hosts, installing the agent where needed;
// its reads (Get, List, Diff) need no agent and change nothing on a host.
type Client struct {
	mu        sync.Mutex        // guards the maps, never held across a host command
	installed map[string]string // host name -> agent path there
	digests   map[string]string // local agent binary -> its sha256 (prefix)
	// installing holds a token per host while an install there runs: one
	// install per host at a time, while every other host goes on, and a
	// caller waiting for it can give up (its context).
	installing map[string]chan struct{}
}

// NewClient returns a client.
func NewClient() *Client {
	return &Client{installed: map[string]string{}, digests: map[string]string{}, installing: map[string]chan struct{}{}}
}

// AgentDirEnv names a directory of standalone agents (cmd/sandboxer-agent),
// one per platform, named by AgentFileName.
const AgentDirEnv = "SANDBOXER_AGENT_DIR"

// AgentFileName is the file name of the standalone agent for platform
// ("linux/arm64" -> "sandboxer-agent_linux_arm64").
func AgentFileName(platform string) string {
	return "sandboxer-agent_" + strings.ReplaceAll(platform, "/", "_")
}

// goPlatform maps `uname -sm` to GOOS/GOARCH.
func goPlatform(uname string) string {
	f := strings.Fields(strings.ToLower(uname))
	if len(f) != 2 {
		return uname
	}
	arch := map[string]string{"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}[f[1]]
	if arch == "" {
		arch = f[1]
	}
	return f[0] + "/" + arch
}

// binaryFor returns the local executable to install as the agent on a host
// of platform. The standalone agent (cmd/sandboxer-agent) is preferred
// wherever there is one for the platform, being a tenth of the provider's
// size: first in $SANDBOXER_AGENT_DIR, then beside the provider's
// executable, where release archives put the Linux ones. Only without one
// does a host of the provider's own platform get the provider's executable
// (a provider built from source has no standalone agent beside it).
func binaryFor(platform string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("unable to locate the provider executable: %w", err)
	}
	return agentBinary(self, platform)
}

// agentBinary is binaryFor for a provider executable at self.
func agentBinary(self, platform string) (string, error) {
	name := AgentFileName(platform)
	var dirs []string
	if dir := os.Getenv(AgentDirEnv); dir != "" {
		dirs = append(dirs, dir)
	}
	dirs = append(dirs, filepath.Dir(self))
	var looked []string
	for _, dir := range dirs {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
		looked = append(looked, p)
	}
	own := runtime.GOOS + "/" + runtime.GOARCH
	if platform == own {
		return self, nil
	}
	goos, goarch, _ := strings.Cut(platform, "/")
	return "", fmt.Errorf("checkpoints run an agent on the host, and this host is %s while the provider is %s: "+
		"no %s agent found (looked for %s). Release archives ship Linux agents beside the provider; or build one "+
		"with `CGO_ENABLED=0 GOOS=%s GOARCH=%s go build -o DIR/%s ./cmd/sandboxer-agent` and set %s=DIR",
		platform, own, platform, strings.Join(looked, ", "), goos, goarch, name, AgentDirEnv)
}

// digestOf returns the sha256 (hex prefix) of a local binary, once per path.
func (c *Client) digestOf(path string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.digests[path]; ok {
		return d, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }() // only read
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	d := hex.EncodeToString(h.Sum(nil))[:digestLen]
	c.digests[path] = d
	return d, nil
}

// agentPath returns the agent's path on h, copying the agent for h's
// platform there (once per version: the file is named by its digest) when
// missing.
func (c *Client) agentPath(ctx context.Context, h *hosts.Host) (string, error) {
	p, _, err := c.agentPathOrGuess(ctx, h, false)
	return p, err
}

// agentPathOrGuess is agentPath, or with guess, when this process has not
// yet used an agent on h, where this version's agent for the provider's own
// platform would be: most hosts share that platform and already have it,
// and a guess saves the round trip that looks (call tries the guess, and
// looks only when nothing was there to run). guessed says it is a guess.
func (c *Client) agentPathOrGuess(ctx context.Context, h *hosts.Host, guess bool) (p string, guessed bool, err error) {
	if h.Local {
		self, err := os.Executable()
		if err != nil {
			return "", false, fmt.Errorf("unable to locate the provider executable: %w", err)
		}
		return self, false, nil
	}
	if p, ok := c.known(h); ok {
		return p, false, nil
	}
	if guess {
		if bin, err := binaryFor(runtime.GOOS + "/" + runtime.GOARCH); err == nil {
			if digest, err := c.digestOf(bin); err == nil {
				return h.Path(".sandboxer", "bin", installedPrefix+digest), true, nil
			}
		}
	}
	token := c.installToken(h)
	select {
	case token <- struct{}{}:
	case <-ctx.Done():
		return "", false, ctx.Err()
	}
	defer func() { <-token }()
	if p, ok := c.known(h); ok { // installed while this call waited
		return p, false, nil
	}
	p, err = c.install(ctx, h)
	return p, false, err
}

// known is the agent path remembered for h.
func (c *Client) known(h *hosts.Host) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.installed[h.Host()]
	return p, ok
}

// installToken is h's install token (Client.installing).
func (c *Client) installToken(h *hosts.Host) chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.installing[h.Host()]
	if !ok {
		t = make(chan struct{}, 1)
		c.installing[h.Host()] = t
	}
	return t
}

// install looks at h (platform, agents installed) and installs the agent
// for its platform unless it is there. The caller holds h's install token.
func (c *Client) install(ctx context.Context, h *hosts.Host) (string, error) {
	// One round trip: the platform, and the agents already installed.
	dir := h.Path(".sandboxer", "bin")
	out, err := hosts.Output(ctx, h, fmt.Sprintf("uname -sm; ls -1 -- %s 2>/dev/null || true", hosts.Quote(dir)))
	if err != nil {
		return "", err
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	platform := goPlatform(lines[0])
	bin, err := binaryFor(platform)
	if err != nil {
		return "", fmt.Errorf("host %q: %w", h.Host(), err)
	}
	digest, err := c.digestOf(bin)
	if err != nil {
		return "", fmt.Errorf("unable to read the agent %s: %w", bin, err)
	}
	name := installedPrefix + digest
	p := h.Path(".sandboxer", "bin", name)
	upload := !slices.Contains(lines[1:], name)
	if upload {
		f, err := os.Open(bin)
		if err != nil {
			return "", err
		}
		defer func() { _ = f.Close() }() // only read
		if err := hosts.Upload(ctx, h, p, f, 0o700); err != nil {
			return "", fmt.Errorf("unable to install the agent on host %q: %w", h.Host(), err)
		}
		// A new version replaces the ones before it: nothing else runs
		// them, and each is megabytes. Only files named as this code names
		// agents are removed. A run of an old one already under way keeps
		// its executable (unlinked, not gone); a provider process of the
		// old version reinstalls it when it next finds it missing (call).
		// Best effort: a removal that fails costs disk space, not a
		// snapshot.
		var old []string
		for _, n := range lines[1:] {
			if n != name && isInstalledAgent(n) {
				old = append(old, hosts.Quote(h.Path(".sandboxer", "bin", n)))
			}
		}
		if len(old) > 0 {
			_ = h.Run(ctx, "rm -f -- "+strings.Join(old, " "), nil, nil)
		}
	}
	tflog.Debug(ctx, "agent on host", map[string]any{"host": h.Host(), "platform": platform, "binary": bin, "path": p, "uploaded": upload})
	c.remember(h, p)
	return p, nil
}

// installedPrefix and a digest of digestLen hex digits name an agent
// installed on a host.
const (
	installedPrefix = "sandboxer-agent-"
	digestLen       = 16
)

// isInstalledAgent reports whether name is an installed agent's file name.
func isInstalledAgent(name string) bool {
	d, ok := strings.CutPrefix(name, installedPrefix)
	if !ok || len(d) != digestLen {
		return false
	}
	for _, r := range d {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}

// remember records that the agent at p ran on h.
func (c *Client) remember(h *hosts.Host, p string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.installed[h.Host()] = p
}

// forget drops the agent path remembered for h: the next call installs
// the agent again if it is missing.
func (c *Client) forget(h *hosts.Host) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.installed, h.Host())
}

// call runs op on h with req, decoding the JSON answer into out.
func (c *Client) call(ctx context.Context, h *hosts.Host, op string, req Request, out any) error {
	return c.callWatching(ctx, h, op, req, out, nil)
}

// callAnswered runs op on h with req, for an op that answers before it
// ends (a restore: the removal of its volume helpers follows the
// answer). It returns once the answer is decoded
// into out; end waits for the command's end and returns its error (a
// failure after the answer). On error the command has ended.
func (c *Client) callAnswered(ctx context.Context, h *hosts.Host, op string, req Request, out any) (end func() error, err error) {
	answer := make(chan []byte, 1)
	done := make(chan error, 1)
	go func() { done <- c.callWatching(ctx, h, op, req, nil, answer) }()
	var line []byte
	select {
	case line = <-answer:
	case err = <-done:
		if err != nil {
			return nil, err
		}
		select { // the answer came, then the end, and both were ready
		case line = <-answer:
		default:
		}
		done <- nil
	}
	if json.Unmarshal(line, out) == nil {
		return func() error { return <-done }, nil
	}
	// Not an answer: a result line (notFound) or garbage; the end says which.
	if err := <-done; err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("host %q: unreadable agent answer to %s", h.Host(), op)
}

// firstLine passes everything written to w, and sends the first line
// (newline included) on line once it is whole.
type firstLine struct {
	w    *bytes.Buffer
	line chan<- []byte
	sent bool
}

func (f *firstLine) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if !f.sent {
		if i := bytes.IndexByte(f.w.Bytes(), '\n'); i >= 0 {
			f.sent = true
			f.line <- bytes.Clone(f.w.Bytes()[:i+1]) // buffered, read at most once
		}
	}
	return n, err
}

// callWatching is call, also sending the answer's first line on first
// (when not nil) as soon as it is written.
func (c *Client) callWatching(ctx context.Context, h *hosts.Host, op string, req Request, out any, first chan<- []byte) error {
	req.Store, req.Mark = StoreDir(h), hosts.NewMark()
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	inArgs := requestInArgs(h.Local, req, body)
	var stdout bytes.Buffer
	var w io.Writer = &stdout
	if first != nil {
		// An attempt retried below wrote nothing: the line is sent once.
		w = &firstLine{w: &stdout, line: first}
	}
	for attempt := 1; ; attempt++ {
		path, guessed, err := c.agentPathOrGuess(ctx, h, attempt == 1)
		if err != nil {
			return err
		}
		stdout.Reset()
		err = runAgent(ctx, h, path, op, body, inArgs, w)
		if attempt == 1 && !h.Local && (hosts.IsExitCode(err, exitCommandNotFound) || guessed && hosts.IsExitCode(err, exitCannotExecute)) {
			// Nothing ran: the guess was wrong (not installed, or another
			// platform), or the agent installed earlier is gone (a provider
			// of another version has since installed its own there,
			// removing older ones: install). Look, and install, once.
			tflog.Debug(ctx, "agent not runnable where expected: looking at the host", map[string]any{"host": h.Host(), "path": path, "error": err.Error()})
			c.forget(h)
			continue
		}
		if guessed {
			c.remember(h, path) // it ran
		}
		if err != nil {
			return err
		}
		break
	}
	reply, err := hosts.ParseReply(req.Mark, stdout.Bytes())
	if err == nil && reply.Result == notFound {
		return checkpoint.ErrNotFound
	}
	if err == nil && out != nil {
		err = json.Unmarshal(reply.Head, out)
	}
	if err != nil {
		return fmt.Errorf("host %q: unreadable agent answer to %s: %w", h.Host(), op, err)
	}
	return nil
}

// exitCommandNotFound is the shell's exit status for a command it cannot
// find; the agent itself never exits with it.
const exitCommandNotFound = 127

// exitCannotExecute is the shell's status for a file it found but could not
// run (another platform's binary, say).
const exitCannotExecute = 126

// argRequestMax bounds a request passed in the agent's environment
// (RequestEnv): one that fits runs in the host's shell, costing no session
// (and no login shell: see hosts.shell). A larger one goes on stdin, in a
// session of its own, and so does any request carrying a manifest or env
// values (a cross-host restore's). Neither is on a command line, which
// every user of the host can read; a process's environment only its user
// can.
const argRequestMax = 8 << 10

// requestInArgs says whether req (marshalled: body) goes in the agent's
// environment (RequestEnv): on a remote host, small, and without a
// manifest or env values.
func requestInArgs(local bool, req Request, body []byte) bool {
	return !local && len(req.Env) == 0 && req.Manifest == nil && len(body) <= argRequestMax
}

// runAgent runs the agent at path on h for op, with request body: in its
// environment when inArgs, else on stdin.
func runAgent(ctx context.Context, h *hosts.Host, path, op string, body []byte, inArgs bool, stdout io.Writer) error {
	if inArgs {
		// The agent learns that the client went away from the end of its
		// stdout (Main, outputGone).
		return h.Run(ctx, withRequest(body, hosts.Command(path, Command, op)), nil, stdout)
	}
	// The request, then stdin held open until the answer is in: the agent
	// takes EOF as "the client went away" and aborts. On the local host
	// that is also how it learns the provider died.
	hold, release := io.Pipe()
	// Never written: closing it is the EOF. A PipeWriter's Close returns nil.
	defer func() { _ = release.Close() }()
	stdin := io.MultiReader(bytes.NewReader(append(body, '\n')), hold)
	return h.Run(ctx, hosts.Command(path, Command, op), stdin, stdout)
}

// withRequest is command with the request in its environment.
func withRequest(body []byte, command string) string {
	return RequestEnv + "=" + hosts.Quote(string(body)) + " " + command
}

// Snapshot captures workspace on h, and with vols those compose volumes.
func (c *Client) Snapshot(ctx context.Context, h *hosts.Host, workspace string, vols *Volumes, opts checkpoint.CaptureOptions) (checkpoint.Summary, error) {
	var s checkpoint.Summary
	err := c.call(ctx, h, "snapshot", Request{Workspace: workspace, Volumes: vols, Capture: opts}, &s)
	return s, err
}

// Get, List and Diff only read, and they are what a plan runs (a snapshot's
// refresh, the snapshot data sources, finding a snapshot's host): a plan
// must change nothing on a host. So they do not go through the agent, whose
// install writes a binary and whose store opening creates directories.
// Instead one sh command prints the store's manifests (and env files, for a
// diff) and this process verifies them (checkpoint.ParseManifest,
// ParseEnv). A store that does not exist has no snapshots.

// Get returns one snapshot's summary, or checkpoint.ErrNotFound.
func (c *Client) Get(ctx context.Context, h *hosts.Host, id string) (checkpoint.Summary, error) {
	if err := checkpoint.CheckID(id); err != nil {
		return checkpoint.Summary{}, err
	}
	files, err := readSnapshotFiles(ctx, h, []string{checkpoint.ManifestFile(id)})
	if err != nil {
		return checkpoint.Summary{}, err
	}
	m, err := manifestOf(h, id, files)
	if err != nil {
		return checkpoint.Summary{}, err
	}
	return m.Summary(), nil
}

// List returns every snapshot on h, oldest first.
func (c *Client) List(ctx context.Context, h *hosts.Host) ([]checkpoint.Summary, error) {
	files, err := readSnapshotFiles(ctx, h, nil)
	if err != nil {
		return nil, err
	}
	list, err := checkpoint.ParseListing(files)
	if err != nil {
		return nil, fmt.Errorf("host %q: %w", h.Host(), err)
	}
	return list, nil
}

// Delete removes a snapshot and garbage-collects; gone already is success.
func (c *Client) Delete(ctx context.Context, h *hosts.Host, id string) error {
	return c.call(ctx, h, "delete", Request{ID: id}, nil)
}

// Diff compares two snapshots on h. Their env files are read too (values are
// compared here, in memory, and only names reported), as a transfer between
// hosts reads them.
func (c *Client) Diff(ctx context.Context, h *hosts.Host, from, to string) (checkpoint.Diff, error) {
	var names []string
	for _, id := range []string{from, to} {
		if err := checkpoint.CheckID(id); err != nil {
			return checkpoint.Diff{}, err
		}
		names = append(names, checkpoint.ManifestFile(id), checkpoint.EnvFile(id))
	}
	if from == to {
		names = names[:2]
	}
	files, err := readSnapshotFiles(ctx, h, names)
	if err != nil {
		return checkpoint.Diff{}, err
	}
	var ms [2]*checkpoint.Manifest
	var envs [2]map[string]string
	for i, id := range []string{from, to} {
		if ms[i], err = manifestOf(h, id, files); errors.Is(err, checkpoint.ErrNotFound) {
			return checkpoint.Diff{}, fmt.Errorf("snapshot %s: %w", id, err) // which of the two
		} else if err != nil {
			return checkpoint.Diff{}, err
		}
		if envs[i], err = checkpoint.ParseEnv(ms[i], files[checkpoint.EnvFile(id)]); err != nil {
			return checkpoint.Diff{}, fmt.Errorf("host %q: %w", h.Host(), err)
		}
	}
	return checkpoint.Compare(ms[0], ms[1], envs[0], envs[1]), nil
}

// manifestOf verifies snapshot id's manifest among files read by
// readSnapshotFiles; checkpoint.ErrNotFound when it is not among them.
func manifestOf(h *hosts.Host, id string, files map[string][]byte) (*checkpoint.Manifest, error) {
	data, ok := files[checkpoint.ManifestFile(id)]
	if !ok {
		return nil, checkpoint.ErrNotFound
	}
	m, err := checkpoint.ParseManifest(id, data)
	if err != nil {
		return nil, fmt.Errorf("host %q: %w", h.Host(), err)
	}
	return m, nil
}

// readSnapshotFiles returns the named files of h's store that exist (file
// name in checkpoint.SnapshotsDir -> content), or for nil names every
// manifest there: one command, which only reads. No store is no files.
//
// Each file is printed as its content, then NUL, its name, NUL. A manifest
// or env file this provider wrote never holds a NUL byte (a packed manifest
// is base64, and JSON escapes control characters), so the framing needs no
// lengths; a file that does breaks the pairing and is reported, never read
// as something else. A file deleted between the test and the read prints
// nothing and no name: gone, as it would be a moment later. One that cannot
// be read fails the command.
func readSnapshotFiles(ctx context.Context, h *hosts.Host, names []string) (map[string][]byte, error) {
	dir := StoreDir(h) + "/" + checkpoint.SnapshotsDir
	words := `"$d"/*.json`
	if len(names) > 0 {
		quoted := make([]string, len(names))
		for i, n := range names {
			quoted[i] = `"$d"/` + hosts.Quote(n)
		}
		words = strings.Join(quoted, " ")
	}
	script := fmt.Sprintf(`d=%s; [ -d "$d" ] || exit 0; for f in %s; do `+
		`[ -f "$f" ] || continue; `+
		`if cat -- "$f"; then printf '\000%%s\000' "${f##*/}"; elif [ -e "$f" ]; then exit 1; fi; done`,
		hosts.Quote(dir), words)
	out, err := hosts.Output(ctx, h, script)
	if err != nil {
		return nil, fmt.Errorf("unable to read the snapshots of host %q: %w", h.Host(), err)
	}
	parts := bytes.Split(out, []byte{0})
	if len(parts)%2 != 1 || len(parts[len(parts)-1]) != 0 {
		return nil, fmt.Errorf("host %q: a file in %s holds a NUL byte: not a manifest this provider wrote", h.Host(), dir)
	}
	files := make(map[string][]byte, len(parts)/2)
	for i := 0; i+1 < len(parts); i += 2 {
		name := string(parts[i+1])
		if len(names) > 0 && !slices.Contains(names, name) || len(names) == 0 && !checkpoint.IsManifestFile(name) {
			return nil, fmt.Errorf("host %q: a file in %s holds a NUL byte: not a manifest this provider wrote", h.Host(), dir)
		}
		files[name] = parts[i]
	}
	return files, nil
}

// Restore restores snapshot id of h into workspace on the same host, and
// its volumes (if any) into those of vols.Project (none without vols).
func (c *Client) Restore(ctx context.Context, h *hosts.Host, id, workspace string, vols *Volumes, opts checkpoint.RestoreOptions) (checkpoint.RestoreResult, error) {
	var r checkpoint.RestoreResult
	err := c.call(ctx, h, "restore", Request{ID: id, Workspace: workspace, Volumes: vols, Restore: opts}, &r)
	return r, err
}

// RestoreNew restores snapshot id of host src into workspace, a new
// sandbox's, on host dst. When the snapshot has volumes for vols.Project
// and both hosts are one, it restores the workspace alone and returns
// fill, which fills the volumes: the caller runs it once, and meanwhile
// may do what needs only the workspace's files. fill returns once the
// volumes are written, with end, which waits for what the fill leaves
// running on the host (volume helpers being removed) and which the
// caller calls, always, before the sandbox is ready or torn down.
// Otherwise (fill nil) everything is restored before it returns, as
// RestoreFrom does.
func (c *Client) RestoreNew(ctx context.Context, src *hosts.Host, id string, dst *hosts.Host, workspace string, vols *Volumes, opts checkpoint.RestoreOptions) (res checkpoint.RestoreResult, fill func(context.Context) (checkpoint.RestoreResult, func() error, error), err error) {
	if src.Host() != dst.Host() || vols == nil {
		res, err = c.RestoreFrom(ctx, src, id, dst, workspace, vols, opts)
		return res, nil, err
	}
	req := Request{ID: id, Workspace: workspace, Volumes: vols, Restore: opts, Part: partWorkspace}
	var a restoreAnswer
	if err = c.call(ctx, src, "restore", req, &a); err != nil || !a.VolumesLeft {
		return a.RestoreResult, nil, err
	}
	return a.RestoreResult, func(ctx context.Context) (checkpoint.RestoreResult, func() error, error) {
		var r checkpoint.RestoreResult
		req.Part = partVolumes
		end, err := c.callAnswered(ctx, src, "restore", req, &r)
		return r, end, err
	}, nil
}

// RestoreAnswered is RestoreFrom, returning once the snapshot is written:
// end waits for what the restore leaves running on the host (volume
// helpers being removed) and returns what failed then. The caller calls
// end, always (it is never nil), before it is done with the sandbox.
func (c *Client) RestoreAnswered(ctx context.Context, src *hosts.Host, id string, dst *hosts.Host, workspace string, vols *Volumes, opts checkpoint.RestoreOptions) (res checkpoint.RestoreResult, end func() error, err error) {
	end = func() error { return nil }
	if src.Host() != dst.Host() {
		res, err = c.RestoreFrom(ctx, src, id, dst, workspace, vols, opts)
		return res, end, err
	}
	var a restoreAnswer
	e, err := c.callAnswered(ctx, src, "restore", Request{ID: id, Workspace: workspace, Volumes: vols, Restore: opts}, &a)
	if err != nil {
		return res, end, err
	}
	return a.RestoreResult, e, nil
}

// RestoreFrom restores snapshot id of host src into workspace (and vols)
// on host dst, transferring the objects dst lacks first (through this
// process: the only time file data leaves a host). Nothing is recorded as
// a snapshot on dst.
func (c *Client) RestoreFrom(ctx context.Context, src *hosts.Host, id string, dst *hosts.Host, workspace string, vols *Volumes, opts checkpoint.RestoreOptions) (checkpoint.RestoreResult, error) {
	if src.Host() == dst.Host() {
		return c.Restore(ctx, src, id, workspace, vols, opts)
	}
	full, err := c.transfer(ctx, src, id, dst)
	if err != nil {
		return checkpoint.RestoreResult{}, err
	}
	var r checkpoint.RestoreResult
	err = c.call(ctx, dst, "restore", Request{Manifest: full.Manifest, Env: full.Env, Workspace: workspace, Volumes: vols, Restore: opts}, &r)
	// The objects transferred for the restore belong to no snapshot of
	// dst: collected, whether it worked or not (a retry transfers again).
	if gerr := c.call(ctx, dst, "gc", Request{}, nil); gerr != nil {
		err = errors.Join(err, fmt.Errorf("host %q: unable to remove the objects transferred for the restore: %w", dst.Host(), gerr))
	}
	return r, err
}

// Copy makes newID (named name) with the content of snapshot id of src, on
// dst (the same host or another).
func (c *Client) Copy(ctx context.Context, src *hosts.Host, id string, dst *hosts.Host, newID, name string, now time.Time) (checkpoint.Summary, error) {
	var s checkpoint.Summary
	if src.Host() == dst.Host() {
		err := c.call(ctx, src, "copy", Request{ID: id, NewID: newID, Name: name, Now: now}, &s)
		return s, err
	}
	full, err := c.transfer(ctx, src, id, dst)
	if err != nil {
		return s, err
	}
	err = c.call(ctx, dst, "import-manifest", Request{Manifest: full.Manifest, Env: full.Env, NewID: newID, Name: name, Now: now}, &s)
	return s, err
}

// transfer sends dst the objects of snapshot id of src that it lacks, as one
// tar stream from src's agent to dst's; dst verifies every object's digest.
func (c *Client) transfer(ctx context.Context, src *hosts.Host, id string, dst *hosts.Host) (*Full, error) {
	var full Full
	if err := c.call(ctx, src, "full", Request{ID: id}, &full); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var digests []string
	for e := range full.Manifest.Files() {
		if e.Type == checkpoint.TypeFile && !seen[e.Digest] {
			seen[e.Digest] = true
			digests = append(digests, e.Digest)
		}
	}
	var missing []string
	if err := c.call(ctx, dst, "missing", Request{Digests: digests}, &missing); err != nil {
		return nil, err
	}
	if len(missing) == 0 {
		return &full, nil
	}
	srcAgent, err := c.agentPath(ctx, src)
	if err != nil {
		return nil, err
	}
	dstAgent, err := c.agentPath(ctx, dst)
	if err != nil {
		return nil, err
	}
	exportReq, _ := json.Marshal(Request{Store: StoreDir(src), Digests: missing})
	exportReq = append(exportReq, '\n')
	importReq, _ := json.Marshal(Request{Store: StoreDir(dst)})
	pr, pw := io.Pipe()
	exported := make(chan error, 1)
	go func() {
		err := src.Run(ctx, hosts.Command(srcAgent, Command, "export-objects"), bytes.NewReader(exportReq), pw)
		_ = pw.CloseWithError(err) // always nil: it only hands err to the reader
		exported <- err
	}()
	err = dst.Run(ctx, withRequest(importReq, hosts.Command(dstAgent, Command, "import-objects")), pr, nil)
	_ = pr.CloseWithError(io.ErrClosedPipe) // always nil: it only stops the export's writes
	if xerr := <-exported; xerr != nil && err == nil {
		err = xerr
	}
	if err != nil {
		return nil, fmt.Errorf("unable to transfer snapshot %s from host %q to host %q: %w", id, src.Host(), dst.Host(), err)
	}
	return &full, nil
}

// Usage reports the store size and snapshot count on h.
func (c *Client) Usage(ctx context.Context, h *hosts.Host) (bytes int64, snapshots int64, err error) {
	var u map[string]int64
	err = c.call(ctx, h, "usage", Request{}, &u)
	return u["bytes"], u["snapshots"], err
}
