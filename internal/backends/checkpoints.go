package backends

import (
	"context"
	"errors"
	"fmt"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/checkpoint"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// Quiesce modes for a snapshot.
const (
	QuiesceNone  = "none"
	QuiescePause = "pause"
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
	Quiesce     string
	Limits      checkpoint.Limits
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

// Sandbox reads a sandbox's record (ErrNotFound when the host has none).
func (r *Registry) Sandbox(ctx context.Context, h *hosts.Host, id string) (*Sandbox, error) {
	if err := CheckID(id); err != nil {
		return nil, err
	}
	return readRecord(ctx, h, id)
}

// Snapshot captures a sandbox's workspace on its host. The sandbox keeps
// running; with quiesce "pause" its services are paused for the capture and
// always unpaused after, also when the capture fails.
func (r *Registry) Snapshot(ctx context.Context, h *hosts.Host, req SnapshotRequest) (summary checkpoint.Summary, err error) {
	sb, err := r.Sandbox(ctx, h, req.SandboxID)
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
	if req.Quiesce == QuiescePause {
		if err := snap.Pause(ctx, h, sb); err != nil {
			_ = snap.Unpause(context.WithoutCancel(ctx), h, sb) // a partial pause is undone too
			return summary, err
		}
		// Unpause, also on failure, and wait until healthchecks that failed
		// while paused pass again: the source is left as it was found.
		defer func() {
			bctx := context.WithoutCancel(ctx)
			if uerr := snap.Unpause(bctx, h, sb); uerr != nil {
				err = errors.Join(err, uerr)
				return
			}
			if werr := ext.WaitReady(ctx, h, sb); werr != nil {
				err = errors.Join(err, werr)
			}
		}()
	}
	return r.Agent.Snapshot(ctx, h, sb.WorkspaceDir, checkpoint.CaptureOptions{
		ID: req.ID, Name: req.Name, Description: req.Description, SandboxID: sb.ID, Profile: sb.Profile,
		Metadata: req.Metadata, Filter: req.Filter, IncludeEnv: req.IncludeEnv, Limits: req.Limits, Now: r.now().UTC(),
	})
}

// RestoreInPlace writes a snapshot into an existing sandbox: its services
// are stopped around the write, then started and waited ready again, also
// when the restore itself failed (the workspace is then unchanged).
func (r *Registry) RestoreInPlace(ctx context.Context, snapHost *hosts.Host, snapshotID string, h *hosts.Host, targetID string, opts checkpoint.RestoreOptions) (checkpoint.RestoreResult, error) {
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
	if err := snap.Stop(ctx, h, sb); err != nil {
		return res, err
	}
	res, err = r.Agent.RestoreFrom(ctx, snapHost, snapshotID, h, sb.WorkspaceDir, opts)
	bctx := context.WithoutCancel(ctx)
	if serr := snap.Start(bctx, h, sb); serr != nil {
		return res, errors.Join(err, serr)
	}
	if werr := ext.WaitReady(ctx, h, sb); werr != nil {
		return res, errors.Join(err, werr)
	}
	return res, err
}

// RestoreNew creates a sandbox from req whose workspace is populated from
// the snapshot before it starts. The source sandbox is not touched.
func (r *Registry) RestoreNew(ctx context.Context, snapHost *hosts.Host, snapshotID string, req Request) (*Sandbox, checkpoint.RestoreResult, error) {
	var res checkpoint.RestoreResult
	req.Fill = func(ctx context.Context, ws string) error {
		var err error
		res, err = r.Agent.RestoreFrom(ctx, snapHost, snapshotID, req.Host, ws,
			checkpoint.RestoreOptions{Files: true, Env: true, Overwrite: true})
		return err
	}
	sb, err := r.Create(ctx, req)
	return sb, res, err
}
