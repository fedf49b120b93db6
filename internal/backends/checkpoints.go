package backends

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/agent"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// Snapshots: every checkpoint operation goes through the registry, which
// runs the host agent and knows the sandboxes; callers see snapshots and
// sandboxes, never the agent. Reads (GetSnapshot, ListSnapshots,
// DiffSnapshots) change nothing on a host, so a plan may call them.

// Quiesce modes for a snapshot.
const (
	QuiesceNone  = "none"
	QuiescePause = "pause"
	QuiesceStop  = "stop" // services stopped for the capture, started after
)

// SnapshotRequest asks for a snapshot of a sandbox's workspace.
type SnapshotRequest struct {
	ID          string
	SandboxID   string
	Name        string
	Description string
	Metadata    map[string]string
	Filter      checkpoint.Filter
	IncludeEnv  bool
	// Quiesce is none, pause or stop; empty means the profile's default.
	Quiesce string
	// IncludeVolumes: the sandbox's named compose volumes are captured too
	// (nil: the profile's snapshots.volumes). Volumes limits them to these
	// compose volume names.
	IncludeVolumes *bool
	Volumes        []string
	// Profile is the sandbox's profile: its snapshot limits apply, and its
	// default quiesce when Quiesce is empty. Nil: no profile limits.
	Profile *catalog.Profile
	// Sandbox, when the caller has just read the sandbox's record (Sandbox),
	// saves reading it again.
	Sandbox *Sandbox
}

// DefaultQuiesce is the quiesce a snapshot of a sandbox of profile p uses
// when its configuration sets none: the profile's snapshots.quiesce, else none.
func DefaultQuiesce(p *catalog.Profile) string {
	if p != nil && p.Snapshots.Quiesce != "" {
		return p.Snapshots.Quiesce
	}
	return QuiesceNone
}

// DefaultIncludeVolumes says whether a snapshot of a sandbox of profile p
// takes its volumes when its configuration does not say.
func DefaultIncludeVolumes(p *catalog.Profile) bool {
	return p != nil && p.Snapshots.Volumes
}

// volumesOf is what a restore into sb writes the snapshot's volumes into:
// its compose project's volumes; nil for a sandbox without one.
// restoreOptions are opts for a restore into sb. What follows the restore
// of a sandbox with services waits for the data the restore left dirty:
// the teardown of a volume helper, and the engine creating the services'
// containers (500 MB left dirty: `compose up` 0.73 s, 0.42 s once
// synced). So its files' writeback starts as each is written, and the
// disk works during the restore. A workspace's restore is followed by
// nothing that waits for the disk: its data is left to the kernel's
// writeback, as restic's and tar's are.
func restoreOptions(sb *Sandbox, opts checkpoint.RestoreOptions) checkpoint.RestoreOptions {
	opts.Writeback = sb.ComposeProject != ""
	return opts
}

func volumesOf(sb *Sandbox) *agent.Volumes {
	if sb.ComposeProject == "" {
		return nil
	}
	return &agent.Volumes{Project: sb.ComposeProject}
}

// snapshotLimits are profile p's bounds on what one snapshot may hold,
// checked before anything is captured.
func snapshotLimits(p *catalog.Profile) checkpoint.Limits {
	if p == nil {
		return checkpoint.Limits{}
	}
	return checkpoint.Limits{MaxBytes: p.Snapshots.MaxBytes, MaxFiles: p.Snapshots.MaxFiles}
}

// ErrSnapshotNotFound is returned for a snapshot its host does not hold.
var ErrSnapshotNotFound = checkpoint.ErrNotFound

// GetSnapshot reads a snapshot's summary (ErrSnapshotNotFound when absent).
func (r *Registry) GetSnapshot(ctx context.Context, h *hosts.Host, id string) (checkpoint.Summary, error) {
	return r.agent.Get(ctx, h, id)
}

// ListSnapshots lists the snapshots stored on a host.
func (r *Registry) ListSnapshots(ctx context.Context, h *hosts.Host) ([]checkpoint.Summary, error) {
	return r.agent.List(ctx, h)
}

// DiffSnapshots compares two snapshots stored on the same host.
func (r *Registry) DiffSnapshots(ctx context.Context, h *hosts.Host, from, to string) (checkpoint.Diff, error) {
	return r.agent.Diff(ctx, h, from, to)
}

// DeleteSnapshot removes a snapshot (its objects go when no snapshot uses them).
func (r *Registry) DeleteSnapshot(ctx context.Context, h *hosts.Host, id string) error {
	defer r.invalidateReads(ctx, h)
	return r.agent.Delete(ctx, h, id)
}

// CopySnapshot copies snapshot id from src's store to dst's (the same host
// or another) as newID: objects travel once and are verified on arrival.
func (r *Registry) CopySnapshot(ctx context.Context, src *hosts.Host, id string, dst *hosts.Host, newID, name string) (checkpoint.Summary, error) {
	defer r.invalidateReads(ctx, dst)
	return r.agent.Copy(ctx, src, id, dst, newID, name, r.now().UTC())
}

// Snapshotter returns the extension as a Snapshotter, or an error naming
// what cannot snapshot.
func (r *Registry) Snapshotter(profile, extension string) (Snapshotter, error) {
	ext, err := r.Extension(extension)
	if err != nil {
		return nil, err
	}
	s, ok := ext.(Snapshotter)
	if !ok {
		return nil, fmt.Errorf("profile %s uses extension %s, which does not support snapshots", profile, extension)
	}
	return s, nil
}

// CheckSnapshot asks sb's extension, when it can refuse a checkpoint of a
// running sandbox (SnapshotChecker), whether this one may be taken. It only
// reads the host: the snapshot resource asks at plan time.
func (r *Registry) CheckSnapshot(ctx context.Context, h *hosts.Host, sb *Sandbox, quiesce string, volumes bool) error {
	ext, err := r.Extension(sb.Extension)
	if err != nil {
		return err
	}
	if c, ok := ext.(SnapshotChecker); ok {
		return c.CheckSnapshot(ctx, h, sb, quiesce, volumes)
	}
	return nil
}

// Snapshot captures a sandbox's workspace on its host. The sandbox keeps
// running; with quiesce "pause" its services are paused for the capture and
// always unpaused after, also when the capture fails.
func (r *Registry) Snapshot(ctx context.Context, h *hosts.Host, req SnapshotRequest) (summary checkpoint.Summary, err error) {
	defer r.invalidateReads(ctx, h) // a pause changes what a refresh would see
	sb := req.Sandbox
	if sb == nil || sb.ID != req.SandboxID {
		sb, err = r.Sandbox(ctx, h, req.SandboxID)
	}
	if errors.Is(err, ErrNotFound) {
		return summary, fmt.Errorf("sandbox %s is not on host %q", req.SandboxID, h.Host())
	}
	if err != nil {
		return summary, err
	}
	ext, err := r.Extension(sb.Extension)
	if err != nil {
		return summary, err
	}
	snap, err := r.Snapshotter(sb.Profile, sb.Extension)
	if err != nil {
		return summary, err
	}
	if req.Quiesce == "" {
		req.Quiesce = DefaultQuiesce(req.Profile)
	}
	if sb.Stopped() {
		req.Quiesce = QuiesceNone // nothing runs that a pause or stop would hold still
	}
	include := DefaultIncludeVolumes(req.Profile)
	if req.IncludeVolumes != nil {
		include = *req.IncludeVolumes
	}
	if err := r.CheckSnapshot(ctx, h, sb, req.Quiesce, include); err != nil {
		return summary, err
	}
	var vols *agent.Volumes
	if include {
		if sb.ComposeProject == "" {
			return summary, fmt.Errorf("sandbox %s has no compose project, so no volumes: set include_volumes = false", sb.ID)
		}
		vols = &agent.Volumes{Project: sb.ComposeProject, Names: req.Volumes}
	}
	switch req.Quiesce {
	case QuiescePause:
		if err := snap.Pause(ctx, h, sb); err != nil {
			uctx, cancel := detached(ctx)
			defer cancel()
			_ = snap.Unpause(uctx, h, sb) // a partial pause is undone too
			return summary, err
		}
		// Unpaused, also on failure, and waited until healthchecks that
		// failed while paused pass again: the source is left as it was found.
		defer func() { err = resume(ctx, ext, h, sb, snap.Unpause, err) }()
	case QuiesceStop:
		defer func() { err = resume(ctx, ext, h, sb, snap.Start, err) }()
		if err := snap.Stop(ctx, h, sb); err != nil {
			return summary, err
		}
	}
	summary, err = r.agent.Snapshot(ctx, h, sb.WorkspaceDir, vols, checkpoint.CaptureOptions{
		ID: req.ID, Name: req.Name, Description: req.Description, SandboxID: sb.ID, Profile: sb.Profile,
		Metadata: req.Metadata, Filter: req.Filter, IncludeEnv: req.IncludeEnv, Limits: snapshotLimits(req.Profile), Now: r.now().UTC(),
	})
	if err != nil && strings.Contains(err.Error(), "no space left on device") {
		err = fmt.Errorf("snapshot %s: the disk of host %q holding %s is full: free space there, or delete snapshots "+
			"(nothing of this snapshot was kept; earlier snapshots are intact)\n\n%w", req.ID, h.Host(), h.RootDir, err)
	}
	return summary, err
}

// RestoreInPlace writes a snapshot into an existing sandbox: its services
// are stopped around the write, then started and waited ready again, also
// when the restore itself failed (the workspace is then unchanged).
func (r *Registry) RestoreInPlace(ctx context.Context, snapHost *hosts.Host, snapshotID string, h *hosts.Host, targetID string, opts checkpoint.RestoreOptions) (checkpoint.RestoreResult, error) {
	defer r.invalidateReads(ctx, h)
	var res checkpoint.RestoreResult
	sb, err := r.Sandbox(ctx, h, targetID)
	if errors.Is(err, ErrNotFound) {
		return res, fmt.Errorf("target sandbox %s is not on host %q", targetID, h.Host())
	}
	if err != nil {
		return res, err
	}
	ext, err := r.Extension(sb.Extension)
	if err != nil {
		return res, err
	}
	snap, err := r.Snapshotter(sb.Profile, sb.Extension)
	if err != nil {
		return res, err
	}
	end := func() error { return nil }
	if err = snap.Stop(ctx, h, sb); err == nil {
		res, end, err = r.agent.RestoreAnswered(ctx, snapHost, snapshotID, h, sb.WorkspaceDir, volumesOf(sb), restoreOptions(sb, opts))
	}
	// The services start again even when the stop (perhaps half done) or
	// the restore failed, or its context ended: the sandbox is never left
	// stopped by a restore. They start while the volume helpers that
	// wrote the volumes are removed, which end waits for.
	err = resume(ctx, ext, h, sb, snap.Start, err)
	// Started to take the restored files (a compose file rendered again),
	// then stopped again when it is meant to be.
	err = keepStopped(ctx, ext, h, sb, err)
	if eerr := end(); eerr != nil {
		err = errors.Join(err, eerr)
	}
	return res, err
}

// resume runs start (Unpause or Start) on sb and waits until sb is ready
// again, also when ctx has ended (detached), and returns err joined with
// what failed of that.
func resume(ctx context.Context, ext Extension, h *hosts.Host, sb *Sandbox, start func(context.Context, *hosts.Host, *Sandbox) error, err error) error {
	rctx, cancel := detached(ctx)
	defer cancel()
	if serr := start(rctx, h, sb); serr != nil {
		return errors.Join(err, serr)
	}
	if _, werr := ext.WaitReady(rctx, h, sb); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}

// RestoreNew creates a sandbox from req whose workspace is populated from
// the snapshot before it starts. The source sandbox is not touched.
func (r *Registry) RestoreNew(ctx context.Context, snapHost *hosts.Host, snapshotID string, req Request) (*Sandbox, checkpoint.RestoreResult, error) {
	var res checkpoint.RestoreResult
	var fill func(context.Context) (checkpoint.RestoreResult, func() error, error)
	req.Fill = func(ctx context.Context, sb *Sandbox) error {
		var err error
		res, fill, err = r.agent.RestoreNew(ctx, snapHost, snapshotID, req.Host, sb.WorkspaceDir, volumesOf(sb),
			restoreOptions(sb, checkpoint.RestoreOptions{Files: true, Env: true, Overwrite: true}))
		return err
	}
	// The volumes are filled while the steps that need only the
	// workspace's files run (composessh renders its compose file), and
	// the helpers that filled them are removed while the rest run.
	req.FillVolumes = func(ctx context.Context, _ *Sandbox) (func() error, error) {
		if fill == nil {
			return nil, nil
		}
		vres, end, err := fill(ctx)
		res.FilesRestored += vres.FilesRestored
		return end, err
	}
	sb, err := r.Create(ctx, req)
	return sb, res, err
}
