package backends

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// Day two: a sandbox's services stopped and started again in place
// (desired_state), everything else kept.

// CanStop says whether sandboxes of the named extension can be stopped in
// place: what the plan refuses desired_state = "stopped" by.
func (r *Registry) CanStop(extension string) bool {
	if r.OnCluster(extension) {
		return true // workloads scale to 0 and back
	}
	ext, ok := r.exts[extension]
	if !ok {
		return false
	}
	_, ok = ext.(Stopper)
	return ok
}

// SetDesiredState stops (DesiredStopped) or starts (DesiredRunning) a
// sandbox's services in place, first recording what was asked when the
// record says otherwise, so that the reaper, the inventory and an import
// know a sandbox stopped on purpose. A start waits until the sandbox is
// ready, as a create does, and returns what it saw ready (the published
// ports may have changed); a stop returns the services as they are after
// it. Both are idempotent: stopping stopped services is success.
func (r *Registry) SetDesiredState(ctx context.Context, h *hosts.Host, sb *Sandbox, desired string) (Status, error) {
	pending := &Pending{h: h}
	if sb.Desired() != desired {
		sb.SetDesired(desired)
		pending.addRecord(sb)
	}
	return r.setDesiredState(ctx, h, sb, desired, pending)
}

// UpdateAndSetState is Update, then SetDesiredState, with the record's
// write riding the stop's or the start's own command: one host command
// fewer for each sandbox an apply stops or starts, which across a network
// is a round trip. A change of a metered sandbox's quote is written by
// itself first, as Update does, its hold following it.
func (r *Registry) UpdateAndSetState(ctx context.Context, h *hosts.Host, id string, change func(*Sandbox), desired string) (*Sandbox, Status, error) {
	sb, err := r.recordFromView(ctx, h, id)
	if err != nil {
		return nil, Status{}, err
	}
	prior := *sb
	change(sb)
	if r.ledger != nil && sb.QuoteUSD != prior.QuoteUSD && sb.HourlyPriceUSD != 0 {
		if sb, err = r.Update(ctx, h, id, change); err != nil {
			return nil, Status{}, err
		}
		st, err := r.SetDesiredState(ctx, h, sb, desired)
		return sb, st, err
	}
	sb.SetDesired(desired)
	pending := &Pending{h: h}
	pending.addRecord(sb)
	st, err := r.setDesiredState(ctx, h, sb, desired, pending)
	return sb, st, err
}

// recordFromView is sb's record from h's host view, read now or shared
// with the reads in flight: the stops (starts) an apply makes at once
// share one read of the host's records, as its refreshes do, and so reach
// their own commands together, which the extension can then run as one
// (composessh: hosts.AskTogether) instead of one after another.
func (r *Registry) recordFromView(ctx context.Context, h *hosts.Host, id string) (*Sandbox, error) {
	if err := CheckID(id); err != nil {
		return nil, err
	}
	view, err := r.view(ctx, h)
	if err != nil {
		return nil, err
	}
	data, ok := view.records[id]
	if !ok {
		return nil, ErrNotFound
	}
	return decodeRecord(h, id, data, view.root)
}

func (r *Registry) setDesiredState(ctx context.Context, h *hosts.Host, sb *Sandbox, desired string, pending *Pending) (Status, error) {
	defer r.invalidateReads(ctx, h)
	ext, err := r.Extension(sb.Extension)
	if err != nil {
		return Status{}, err
	}
	stopper, ok := ext.(Stopper)
	if !ok {
		return Status{}, fmt.Errorf("sandbox %s (%s) has no services to stop or start", sb.ID, sb.Extension)
	}
	if desired != DesiredStopped && desired != DesiredRunning {
		return Status{}, fmt.Errorf("desired state %q is neither %q nor %q", desired, DesiredRunning, DesiredStopped)
	}
	ctx = tflog.SetField(ctx, "sandbox_id", sb.ID)
	if desired == DesiredStopped {
		tflog.Debug(ctx, "stopping the sandbox's services")
		return stopper.StopServices(ctx, h, sb, pending)
	}
	tflog.Debug(ctx, "starting the sandbox's services")
	took := startTimings(r.now())
	if err := stopper.StartServices(ctx, h, sb, pending); err != nil {
		return Status{}, err
	}
	took.done(TimingStart, r.now())
	st, err := ext.WaitReady(ctx, h, sb)
	if err != nil {
		return Status{}, fmt.Errorf("sandbox %s was started but did not become ready: %w", sb.ID, err)
	}
	took.done(TimingReady, r.now())
	sb.Timings = took.result(r.now())
	tflog.Debug(ctx, "started: ready", timingFields(sb.Timings))
	return st, nil
}

// keepStopped stops again, after a restore in place started it, a sandbox
// whose desired state is stopped; err is the restore's.
func keepStopped(ctx context.Context, ext Extension, h *hosts.Host, sb *Sandbox, err error) error {
	stopper, ok := ext.(Stopper)
	if !sb.Stopped() || !ok {
		return err
	}
	sctx, cancel := detached(ctx)
	defer cancel()
	_, serr := stopper.StopServices(sctx, h, sb, nil)
	return errors.Join(err, serr)
}

// SetDesired records what the configuration asks of the services
// (DesiredStopped; anything else is running, and is recorded as nothing).
func (sb *Sandbox) SetDesired(desired string) {
	sb.DesiredState = ""
	if desired == DesiredStopped {
		sb.DesiredState = DesiredStopped
	}
}
