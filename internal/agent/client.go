package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

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

// Client runs agent operations on hosts, installing the agent where needed.
type Client struct {
	once    sync.Once
	self    string // this executable
	digest  string // its sha256, naming the installed copy
	selfErr error

	mu        sync.Mutex
	installed map[string]string // host name -> agent path there
}

// NewClient returns a client; the executable is hashed on first use.
func NewClient() *Client { return &Client{installed: map[string]string{}} }

func (c *Client) identify() error {
	c.once.Do(func() {
		c.self, c.selfErr = os.Executable()
		if c.selfErr != nil {
			return
		}
		f, err := os.Open(c.self)
		if err != nil {
			c.selfErr = err
			return
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			c.selfErr = err
			return
		}
		c.digest = hex.EncodeToString(h.Sum(nil))[:16]
	})
	return c.selfErr
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

// agentPath returns the agent's path on h, copying this executable there
// (once per version: the file is named by its digest) when missing.
func (c *Client) agentPath(ctx context.Context, h *hosts.Host) (string, error) {
	if err := c.identify(); err != nil {
		return "", fmt.Errorf("unable to locate the provider executable: %w", err)
	}
	if h.Local {
		return c.self, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock() // one install per host at a time
	if p, ok := c.installed[h.Host()]; ok {
		return p, nil
	}
	p := h.Path(".sandboxer", "bin", "sandboxer-agent-"+c.digest)
	out, err := hosts.Output(ctx, h, fmt.Sprintf("uname -sm; if test -x %s; then echo installed; fi", hosts.Quote(p)))
	if err != nil {
		return "", err
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	want := runtime.GOOS + "/" + runtime.GOARCH
	if got := goPlatform(lines[0]); got != want {
		return "", fmt.Errorf("checkpoints run the provider's agent on the host, which needs a %s host; host %q is %s", want, h.Host(), got)
	}
	if len(lines) < 2 {
		f, err := os.Open(c.self)
		if err != nil {
			return "", err
		}
		defer f.Close()
		if err := hosts.Upload(ctx, h, p, f, 0o700); err != nil {
			return "", fmt.Errorf("unable to install the agent on host %q: %w", h.Host(), err)
		}
	}
	c.installed[h.Host()] = p
	return p, nil
}

// call runs op on h with req, decoding the JSON answer into out.
func (c *Client) call(ctx context.Context, h *hosts.Host, op string, req Request, out any) error {
	path, err := c.agentPath(ctx, h)
	if err != nil {
		return err
	}
	req.Store = StoreDir(h)
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	// The request, then stdin held open until the answer is in: the agent
	// takes EOF as "the client went away" and aborts.
	hold, release := io.Pipe()
	defer release.Close()
	stdin := io.MultiReader(bytes.NewReader(append(body, '\n')), hold)
	var stdout bytes.Buffer
	err = h.Run(ctx, hosts.Command(path, Command, op), stdin, &stdout)
	if hosts.IsExitCode(err, exitNotFound) {
		return checkpoint.ErrNotFound
	}
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		return fmt.Errorf("host %q: unreadable agent answer to %s: %w", h.Host(), op, err)
	}
	return nil
}

// Snapshot captures workspace on h.
func (c *Client) Snapshot(ctx context.Context, h *hosts.Host, workspace string, opts checkpoint.CaptureOptions) (checkpoint.Summary, error) {
	var s checkpoint.Summary
	err := c.call(ctx, h, "snapshot", Request{Workspace: workspace, Capture: opts}, &s)
	return s, err
}

// Get returns one snapshot's summary, or checkpoint.ErrNotFound.
func (c *Client) Get(ctx context.Context, h *hosts.Host, id string) (checkpoint.Summary, error) {
	var s checkpoint.Summary
	err := c.call(ctx, h, "get", Request{ID: id}, &s)
	return s, err
}

// List returns every snapshot on h.
func (c *Client) List(ctx context.Context, h *hosts.Host) ([]checkpoint.Summary, error) {
	var list []checkpoint.Summary
	err := c.call(ctx, h, "list", Request{}, &list)
	return list, err
}

// Delete removes a snapshot and garbage-collects; gone already is success.
func (c *Client) Delete(ctx context.Context, h *hosts.Host, id string) error {
	return c.call(ctx, h, "delete", Request{ID: id}, nil)
}

// Diff compares two snapshots on h.
func (c *Client) Diff(ctx context.Context, h *hosts.Host, from, to string) (checkpoint.Diff, error) {
	var d checkpoint.Diff
	err := c.call(ctx, h, "diff", Request{From: from, To: to}, &d)
	return d, err
}

// Restore restores snapshot id of h into workspace on the same host.
func (c *Client) Restore(ctx context.Context, h *hosts.Host, id, workspace string, opts checkpoint.RestoreOptions) (checkpoint.RestoreResult, error) {
	var r checkpoint.RestoreResult
	err := c.call(ctx, h, "restore", Request{ID: id, Workspace: workspace, Restore: opts}, &r)
	return r, err
}

// RestoreFrom restores snapshot id of host src into workspace on host dst,
// transferring the objects dst lacks first (through this process: the only
// time file data leaves a host). Nothing is recorded as a snapshot on dst.
func (c *Client) RestoreFrom(ctx context.Context, src *hosts.Host, id string, dst *hosts.Host, workspace string, opts checkpoint.RestoreOptions) (checkpoint.RestoreResult, error) {
	if src.Host() == dst.Host() {
		return c.Restore(ctx, src, id, workspace, opts)
	}
	full, err := c.transfer(ctx, src, id, dst)
	if err != nil {
		return checkpoint.RestoreResult{}, err
	}
	var r checkpoint.RestoreResult
	err = c.call(ctx, dst, "restore", Request{Manifest: full.Manifest, Env: full.Env, Workspace: workspace, Restore: opts}, &r)
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
	for _, e := range full.Manifest.Entries {
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
		pw.CloseWithError(err)
		exported <- err
	}()
	err = dst.Run(ctx, hosts.Command(dstAgent, Command, "import-objects", string(importReq)), pr, nil)
	pr.CloseWithError(io.ErrClosedPipe)
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
