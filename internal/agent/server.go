// Package agent runs checkpoint operations on a host. On an SSH host the
// provider installs an agent under root_dir once per version (named by its
// digest, older versions removed): the standalone cmd/sandboxer-agent for
// the host's platform when there is one, else the provider's own
// executable. It runs there as `<binary> __sandboxer_agent <op>`, so file
// data is read and written on the host, never streamed through Terraform.
// Requests are JSON, on the command line or on stdin (see Main); responses
// JSON on stdout, or a named result framed by the request's mark (see
// hosts.Mark) when the snapshot does not exist: exit statuses only say
// that an operation failed.
package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// Command is the argument that turns the provider binary into the agent.
const Command = "__sandboxer_agent"

// notFound is the agent's result (hosts.Mark.ResultLine) when the
// snapshot does not exist.
const notFound = "not-found"

// Request is every operation's input; each uses the fields it needs.
type Request struct {
	Store     string                    `json:"store"`
	Mark      hosts.Mark                `json:"mark,omitempty"` // frames a named result (notFound)
	ID        string                    `json:"id,omitempty"`
	NewID     string                    `json:"new_id,omitempty"`
	Name      string                    `json:"name,omitempty"`
	Workspace string                    `json:"workspace,omitempty"`
	Capture   checkpoint.CaptureOptions `json:"capture,omitempty"`
	Restore   checkpoint.RestoreOptions `json:"restore,omitempty"`
	Manifest  *checkpoint.Manifest      `json:"manifest,omitempty"` // inline (cross-host)
	Env       map[string]string         `json:"env,omitempty"`
	Digests   []string                  `json:"digests,omitempty"`
	Now       time.Time                 `json:"now,omitempty"`

	// Volumes: a snapshot's compose volumes to capture, or the project a
	// restore writes the snapshot's volumes into (volumes.go).
	Volumes *Volumes `json:"volumes,omitempty"`
	// A volume helper's request: what to capture, or the volume to restore.
	VolumeCapture checkpoint.VolumeCaptureOptions `json:"volume_capture,omitzero"`
	Volume        *checkpoint.Volume              `json:"volume,omitempty"`
	// Part splits a restore into a new sandbox in two: partWorkspace,
	// then partVolumes (empty: both, in one call).
	Part string `json:"part,omitempty"`
}

// The parts of a restore into a new sandbox: the workspace first, so that
// what needs only its files (rendering the compose file) can start while
// the volumes are filled.
const (
	partWorkspace = "workspace"
	partVolumes   = "volumes"
)

// restoreAnswer is a restore's answer: with VolumesLeft, the snapshot has
// volumes that a partVolumes call fills.
type restoreAnswer struct {
	checkpoint.RestoreResult
	VolumesLeft bool `json:"volumes_left,omitempty"`
}

// contextUntil is a context that ends when done is closed (the client
// went away): commands it runs (docker, for volume helpers) are stopped.
func contextUntil(done <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-done:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// Full is a manifest with its env, for a transfer to another host.
type Full struct {
	Manifest *checkpoint.Manifest `json:"manifest"`
	Env      map[string]string    `json:"env,omitempty"`
}

// clientGone, when set, is called once the agent has seen its client go
// (EOF on stdin) and told the operation to stop. Only tests set it, in the
// test binary's TestMain (which runs in the agent process): a test that
// cuts the connection then knows the abort is signalled before it lets a
// paused capture go on, instead of sleeping and hoping. Nil otherwise.
var clientGone func()

// inputEnded is closed once stdin, held open by the client while it
// waits, ends.
func inputEnded(stdin io.Reader) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		gone(done)
	}()
	return done
}

// gone closes done: the client went away.
func gone(done chan struct{}) {
	close(done)
	if clientGone != nil {
		clientGone()
	}
}

// RequestEnv carries a request in the agent's environment.
const RequestEnv = "SANDBOXER_AGENT_REQUEST"

// Main runs one agent operation and returns the process exit code.
//
// The request comes one of two ways. As a JSON line on stdin, which the
// client then holds open for as long as it waits: EOF means it went away.
// Or in the environment (RequestEnv, which other users of the host cannot
// read, as they can a command line), the way a client runs the agent in a
// host's shell (see hosts.shell), where stdin is /dev/null: the agent then
// leaves the shell's process group, which the shell kills when its session
// ends, and takes the end of its stdout (the session's, closed by sshd) as
// the client going. import-objects takes its request there because stdin
// carries the data, and is never told the client went. (args[1] is taken
// too, as the environment's value.)
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if v, ok := os.LookupEnv(RequestEnv); ok && len(args) == 1 {
		_ = os.Unsetenv(RequestEnv) // not for the processes it starts
		args = append(args, v)
	}
	if len(args) < 1 {
		// stderr is where failures are told; the exit code says it failed
		// even when that write does not get through.
		_, _ = fmt.Fprintln(stderr, "usage: __sandboxer_agent OP [REQUEST]")
		return 2
	}
	var req Request
	var err error
	switch {
	case args[0] == "import-objects" && len(args) < 2:
		_, _ = fmt.Fprintln(stderr, "import-objects: missing request")
		return 2
	case len(args) >= 2:
		err = json.Unmarshal([]byte(args[1]), &req)
	default:
		// One JSON line: the decoder must not read past it into the hold-open stream.
		var line []byte
		line, err = bufio.NewReader(stdin).ReadBytes('\n')
		if err == nil || (err == io.EOF && len(line) > 0) {
			err = json.Unmarshal(line, &req)
		}
	}
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "%s: bad request: %v\n", args[0], err)
		return 2
	}
	if args[0] != "import-objects" {
		// Closed when the client has gone (connection cut, provider
		// killed): the operation stops before anything is reported complete.
		var done <-chan struct{}
		if len(args) >= 2 {
			done = outputGone(stdout)
		} else {
			done = inputEnded(stdin)
		}
		req.Capture.Done, req.Restore.Done, req.VolumeCapture.Done = done, done, done
	}
	out, err := run(args[0], req, stdin, stdout)
	if err == nil && out != nil {
		err = json.NewEncoder(stdout).Encode(out)
	}
	if errors.Is(err, checkpoint.ErrNotFound) && req.Mark != "" {
		_, _ = io.WriteString(stdout, req.Mark.ResultLine(notFound)) // a lost write leaves the client an unreadable answer
		return 0
	}
	if err != nil {
		_, _ = fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// run runs one operation. There are no get, list or diff operations: those
// reads are answered without the agent (Client.Get, List, Diff), so that a
// plan installs nothing and opens no store on a host.
func run(op string, req Request, stdin io.Reader, stdout io.Writer) (any, error) {
	switch op { // a volume helper's: the store is mounted, not opened
	case "volume-capture":
		owner, err := checkpoint.StoreOwner(req.Store)
		if err != nil {
			return nil, err
		}
		s := &checkpoint.Store{Dir: req.Store, Owner: owner}
		return s.CaptureVolume(req.Workspace, req.VolumeCapture)
	case "volume-restore":
		if req.Volume == nil {
			return nil, errors.New("volume-restore: no volume in the request")
		}
		s := &checkpoint.Store{Dir: req.Store} // read-only here
		return s.RestoreVolume(*req.Volume, req.Workspace, req.Restore)
	}
	s, err := checkpoint.Open(req.Store)
	if err != nil {
		return nil, err
	}
	switch op {
	case "snapshot":
		if req.Volumes != nil {
			ctx, cancel := contextUntil(req.Capture.Done)
			defer cancel()
			// Held until the manifest is written: garbage collection must
			// not take the volumes' objects before it references them.
			unlock, err := s.LockShared()
			if err != nil {
				return nil, err
			}
			defer unlock()
			if req.Capture.Volumes, req.Capture.VolumesStoredBytes, err = captureVolumes(ctx, req.Store, req.Volumes, req.Capture); err != nil {
				return nil, err
			}
		}
		m, err := s.Capture(req.Workspace, req.Capture)
		if err != nil {
			return nil, err
		}
		return m.Summary(), nil
	case "full":
		m, err := s.Load(req.ID)
		if err != nil {
			return nil, err
		}
		env, err := s.LoadEnv(m)
		if err != nil {
			return nil, err
		}
		return Full{Manifest: m, Env: env}, nil
	case "delete":
		freed, err := s.Delete(req.ID)
		return map[string]int64{"freed_bytes": freed}, err
	case "gc":
		freed, err := s.GC()
		return map[string]int64{"freed_bytes": freed}, err
	case "copy":
		m, err := s.Copy(req.ID, req.NewID, req.Name, req.Now)
		if err != nil {
			return nil, err
		}
		return m.Summary(), nil
	case "restore":
		m, env := req.Manifest, req.Env
		if m == nil {
			if m, err = s.Load(req.ID); err != nil {
				return nil, err
			}
			if env, err = s.LoadEnv(m); err != nil {
				return nil, err
			}
		}
		volumes := len(m.Volumes) > 0 && req.Volumes != nil && req.Restore.Files
		var vres checkpoint.RestoreResult
		settle := func() error { return nil }
		if volumes && req.Part != partWorkspace {
			ctx, cancel := contextUntil(req.Restore.Done)
			defer cancel()
			if err := m.Check(); err != nil {
				return nil, err
			}
			// Only a restore in one call writes over a workspace: the
			// parts are for a new sandbox's.
			if req.Part == "" && checkpoint.InPlace(req.Workspace) {
				if err := s.Verify(m, req.Restore.Workers); err != nil {
					return nil, err
				}
			}
			if vres, settle, err = restoreVolumes(ctx, s, m, req.Volumes.Project, req.Restore); err != nil {
				return nil, err
			}
		}
		var answer any = vres
		if req.Part != partVolumes {
			res, err := s.RestoreManifest(m, env, req.Workspace, req.Restore)
			if err != nil {
				return nil, errors.Join(err, settle())
			}
			res.FilesRestored += vres.FilesRestored
			res.Pruned += vres.Pruned
			answer = restoreAnswer{RestoreResult: res, VolumesLeft: volumes && req.Part == partWorkspace}
		}
		// Answered before the helper containers are gone: their teardown
		// waits until the data is on disk, and a client that reads the
		// answer as it comes (Client.callAnswered) starts the services
		// meanwhile. A helper that fails after its answer still fails the
		// call.
		if err := json.NewEncoder(stdout).Encode(answer); err != nil {
			return nil, errors.Join(err, settle())
		}
		return nil, settle()
	case "missing":
		missing := s.Missing(req.Digests)
		if missing == nil {
			missing = []string{}
		}
		return missing, nil
	case "export-objects":
		return nil, s.ExportObjects(stdout, req.Digests)
	case "import-objects":
		added, err := s.ImportObjects(stdin)
		return map[string]int64{"added_bytes": added}, err
	case "import-manifest":
		m, err := s.Import(req.Manifest, req.Env, req.NewID, req.Name, req.Now)
		if err != nil {
			return nil, err
		}
		return m.Summary(), nil
	case "usage":
		bytes, count, err := s.Usage()
		return map[string]int64{"bytes": bytes, "snapshots": int64(count)}, err
	}
	return nil, fmt.Errorf("unknown agent operation %q", op)
}
