package backends

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/agent"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/metering"
)

// Registry holds the extensions by name and runs the sandbox lifecycle.
type Registry struct {
	exts map[string]Extension
	// clusterExts run sandboxes on clusters (cluster.go).
	clusterExts map[string]ClusterExtension
	now         func() time.Time
	agent       *agent.Client // runs checkpoint operations on hosts
	// ledger charges metered sandboxes; nil when no credits_file is set.
	ledger *metering.Ledger

	reaperSettings map[string]ReaperSetting         // host name -> its `reaper` argument, set at configure
	reapers        Flight[string, struct{}]         // reapers installed or removed by this process, by host name
	reads          Flight[string, *hostView]        // host views shared by refreshes (readbatch.go)
	snapReads      Flight[string, *agent.Manifests] // store manifests shared by snapshot refreshes
	recordReads    Flight[recordKey, *hostView]     // single records shared by lookups
	destroyReads   Flight[string, *hostView]        // records shared by the destroys that overlap (never kept)
}

// NewRegistry returns a registry of the given extensions: each an
// Extension of hosts or a ClusterExtension.
func NewRegistry(exts ...Validator) *Registry {
	r := &Registry{exts: map[string]Extension{}, clusterExts: map[string]ClusterExtension{}, now: time.Now, agent: agent.NewClient(), reaperSettings: map[string]ReaperSetting{},
		reapers:      Flight[string, struct{}]{What: "reaper setting", Keep: Forever},
		reads:        Flight[string, *hostView]{What: "host view read", Keep: readBatchWindow, KeepFailures: readBatchWindow},
		snapReads:    Flight[string, *agent.Manifests]{What: "store manifests read", Keep: readBatchWindow, KeepFailures: readBatchWindow},
		recordReads:  Flight[recordKey, *hostView]{What: "record read", Keep: readBatchWindow, KeepFailures: readBatchWindow},
		destroyReads: Flight[string, *hostView]{What: "records read for destroys"}}
	for _, e := range exts {
		switch e := e.(type) {
		case Extension:
			r.exts[e.Name()] = e
		case ClusterExtension:
			r.clusterExts[e.Name()] = e
		default:
			panic(fmt.Sprintf("extension %s is neither of hosts nor of clusters", e.Name()))
		}
	}
	return r
}

// Extension returns the named extension.
func (r *Registry) Extension(name string) (Extension, error) {
	if e, ok := r.exts[name]; ok {
		return e, nil
	}
	names := slices.Sorted(maps.Keys(r.exts))
	return nil, fmt.Errorf("unknown extension %q; available: %s", name, strings.Join(names, ", "))
}

// ErrCleanupFailed marks a create that failed and whose cleanup failed too:
// something of the sandbox may remain on the host.
var ErrCleanupFailed = errors.New("cleanup after the failure also failed")

// defaultCreateDeadline is a create's deadline in the host record when its
// context has none.
const defaultCreateDeadline = 30 * time.Minute

// detachedTimeout bounds each step that runs even when the operation's own
// context has ended: the teardown that follows a failed create, an unpause
// or a restart after a snapshot or restore.
const detachedTimeout = 2 * time.Minute

// detached is ctx without its cancellation but with a deadline of its own
// (detachedTimeout): for work that must still run after ctx ended (a
// cleanup, an unpause, a restart after a restore), yet never forever on a
// host that stopped answering. Every such step uses it; none uses
// context.WithoutCancel alone.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), detachedTimeout)
}

// Create makes a sandbox and waits until it is ready. On any failure it
// tears down what was started, so a failed create leaves nothing behind.
func (r *Registry) Create(ctx context.Context, req Request) (*Sandbox, error) {
	extName := req.Profile.Extension
	if req.Extension != "" {
		extName = req.Extension
	}
	ext, err := r.Extension(extName)
	if err != nil {
		return nil, err
	}
	if req.Metered != nil {
		if r.ledger == nil {
			return nil, fmt.Errorf("profile %s is metered: set credits_file in the provider block", req.Profile.Name)
		}
		// The hold, not the plan-time check, is what stops parallel applies
		// from spending the same credits twice.
		if err := r.ledger.Hold(req.ID, req.Profile.Name, req.Metered.QuoteUSD); err != nil {
			return nil, fmt.Errorf("the metered backend refused sandbox %s: %w", req.ID, err)
		}
		sb, err := r.create(ctx, ext, req)
		if err != nil && !errors.Is(err, ErrCleanupFailed) {
			_ = r.ledger.Release(req.ID)
		}
		// A sandbox whose cleanup failed may remain: it keeps its hold, and
		// its record says it is metered, so the destroy of the tainted
		// resource (or the reaper's settling) charges it.
		return sb, err
	}
	return r.create(ctx, ext, req)
}

// settleReaper installs or removes the host's reaper as its configuration
// says, once per host and provider process.
func (r *Registry) settleReaper(ctx context.Context, h *hosts.Host) error {
	setting := r.reaperSettings[h.Host()]
	if setting == ReaperUnset {
		return nil
	}
	_, err := r.reapers.Do(ctx, h.Host(), func(ctx context.Context) (struct{}, error) {
		if setting == ReaperOn {
			return struct{}{}, InstallReaper(ctx, h)
		}
		return struct{}{}, UninstallReaper(ctx, h)
	})
	return err
}

// fillVolumes starts req.FillVolumes (if set) on sb and returns two
// waits: filled, for the volumes to be written, and settled, for that and
// then for what the fill left running. Each returns its own error (the
// fill's, what failed of what it left), at every call.
func fillVolumes(ctx context.Context, req Request, sb *Sandbox) (filled, settled func() error) {
	if req.FillVolumes == nil {
		none := func() error { return nil }
		return none, none
	}
	type result struct {
		settled func() error
		err     error
	}
	done := make(chan result, 1)
	go func() {
		s, err := req.FillVolumes(ctx, sb)
		done <- result{s, err}
	}()
	var fillOnce, settleOnce sync.Once
	var res result
	var settleErr error
	filled = func() error {
		fillOnce.Do(func() {
			res = <-done
			tflog.Debug(ctx, "create: volumes filled")
		})
		return res.err
	}
	settled = func() error {
		settleOnce.Do(func() {
			_ = filled() // its error is filled's to report
			if res.settled != nil {
				settleErr = res.settled()
			}
		})
		return settleErr
	}
	return filled, settled
}

// create is every extension's create: the record is written before
// anything is made on the host, then the workspace is made and the
// extension's steps run, and the sandbox is waited ready. A failure tears
// down what was made and removes the record; when that cleanup fails too,
// the error says so (ErrCleanupFailed) and the record stays, naming what
// remains.
func (r *Registry) create(ctx context.Context, ext Extension, req Request) (*Sandbox, error) {
	defer r.invalidateReads(ctx, req.Host)
	if err := r.settleReaper(ctx, req.Host); err != nil {
		return nil, err
	}
	// A restore brings its own content; inputs are checked only when given.
	if req.Fill == nil || len(req.Inputs) > 0 {
		if err := ext.Validate(req.Profile, req.Inputs); err != nil {
			return nil, err
		}
	}
	if err := CheckEnv(req.Env); err != nil {
		return nil, err
	}
	sb, steps, err := ext.Prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	sb.ID, sb.Host, sb.Profile, sb.Extension = req.ID, req.Host.Host(), req.Profile.Name, ext.Name()
	if sb.Rules == nil {
		// Every sandbox records the level it was created under, also one
		// without a compose file to check (a workspace): it is what a
		// refresh and an import read back.
		sb.SetRules(req.Rules, Limits{})
	}
	if req.Metered != nil {
		// In the first record: a create cut off, or whose cleanup fails,
		// leaves a record that charges what remains when it is torn down.
		sb.HourlyPriceUSD, sb.QuoteUSD = req.Metered.HourlyPriceUSD, req.Metered.QuoteUSD
	}
	sb.Inputs, sb.Labels, sb.SourceHash, sb.CreatedAt = req.Inputs, req.Labels, req.SourceHash, r.now().UTC()
	// The record carries the create's deadline: should this process die
	// before the sandbox is ready, the host still knows what is there and
	// when to give up on it.
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = r.now().Add(defaultCreateDeadline)
	}
	deadline = deadline.UTC().Truncate(time.Second).Add(time.Second)
	sb.CreateDeadline = &deadline
	ctx = tflog.SetField(tflog.SetField(ctx, "sandbox_id", sb.ID), "extension", sb.Extension)
	// A cleanup runs even when ctx has ended (a timeout is often the
	// cause), bounded on its own.
	cleanUp := func(cause error, cleanup func(context.Context) error) (*Sandbox, error) {
		tflog.Debug(ctx, "create failed: cleaning up", map[string]any{"error": cause.Error()})
		cctx, cancel := detached(ctx)
		defer cancel()
		if err := cleanup(cctx); err != nil {
			tflog.Debug(ctx, "create failed: cleanup failed", map[string]any{"error": err.Error()})
			return nil, fmt.Errorf("%w\n\n%w: sandbox %s may remain on host %q: %v", cause, ErrCleanupFailed, sb.ID, req.Host.Host(), err)
		}
		return nil, cause
	}
	if req.TTL > 0 {
		exp := sb.CreatedAt.Add(req.TTL)
		sb.ExpiresAt, sb.TTL = &exp, req.TTLText
	}
	sb.SetOnExpiry(req.OnExpiry)
	took := startTimings(r.now())
	dropRecord := func(ctx context.Context) error { return removeRecord(ctx, req.Host, sb.ID) }
	tearDown := func(ctx context.Context) error { return r.teardown(ctx, ext, req.Host, sb) }
	// The record, then the workspace, are pending until the first step
	// that takes them runs them in its own command (Pending): one round
	// trip for all of it. A workspace that cannot travel in a command (a
	// restore, a large repo) is made now, by itself.
	pending := &Pending{h: req.Host}
	pending.addRecord(sb)
	if !pending.addWorkspace(req, sb) {
		if err := pending.Flush(ctx); err != nil {
			return cleanUp(err, dropRecord) // nothing is made; a record written in part goes
		}
		tflog.Debug(ctx, "create: record written")
		if err := makeWorkspace(ctx, req, sb); errors.Is(err, ErrWorkspaceExists) {
			return cleanUp(err, dropRecord) // not this sandbox's: nothing of it is removed
		} else if err != nil {
			return cleanUp(err, tearDown)
		}
		tflog.Debug(ctx, "create: workspace made")
	}
	// Made by the command that takes the pending work, the copy's time is
	// in that step's phase: copy says 0.
	took.done(TimingCopy, r.now())
	filled, settled := fillVolumes(ctx, req, sb)
	// recorded says the record on the host holds what the steps learned:
	// the last step wrote it, in its command (taking it pending).
	recorded := false
	for _, step := range steps {
		if !step.WhileFilling {
			if err := filled(); err != nil {
				return cleanUp(errors.Join(err, settled()), tearDown)
			}
		}
		tflog.Debug(ctx, "create: step", map[string]any{"step": step.Name})
		var err error
		if step.RunWith != nil {
			wasPending := !pending.Empty()
			err = step.RunWith(ctx, pending)
			recorded = wasPending && pending.Empty()
		} else {
			if err = pending.Flush(ctx); err == nil {
				err = step.Run(ctx)
			}
			recorded = false
		}
		if errors.Is(err, ErrWorkspaceExists) {
			return cleanUp(err, dropRecord) // not this sandbox's: nothing of it is removed
		} else if err != nil {
			// The fill ends first: the teardown removes the volumes it writes.
			return cleanUp(errors.Join(err, filled(), settled()), tearDown)
		}
		took.done(step.Timing, r.now())
	}
	// Pending still when no step took it (a workspace has no steps): done
	// now, after the steps, its record says all they learned.
	recorded = recorded || !pending.Empty()
	if err := errors.Join(pending.Flush(ctx), filled(), settled()); err != nil {
		return cleanUp(err, tearDown)
	}
	// Written again with what the steps learned, so a sandbox interrupted
	// while waiting is recorded as it is, unless it was by then.
	if !recorded {
		if err := writeRecord(ctx, req.Host, sb); err != nil {
			return cleanUp(err, tearDown)
		}
	}
	took.done("", r.now())
	tflog.Debug(ctx, "create: waiting until ready")
	seen, err := ext.WaitReady(ctx, req.Host, sb)
	if err != nil {
		return cleanUp(err, tearDown)
	}
	took.done(TimingReady, r.now())
	sb.Seen = &seen
	ready := r.now().UTC()
	sb.ReadyAt, sb.CreateDeadline = &ready, nil
	if err := writeRecord(ctx, req.Host, sb); err != nil {
		return cleanUp(err, tearDown)
	}
	sb.Timings = took.result(r.now())
	tflog.Debug(ctx, "create: ready", timingFields(sb.Timings))
	return sb, nil
}

// timingFields are timings as log fields: "seconds_<phase>".
func timingFields(t map[string]float64) map[string]any {
	f := make(map[string]any, len(t))
	for k, v := range t {
		f["seconds_"+k] = v
	}
	return f
}

// Get reads a sandbox's record and its live status from the host.
// It returns ErrNotFound when the host has no record of it.
func (r *Registry) Get(ctx context.Context, h *hosts.Host, id string) (*Sandbox, Status, error) {
	if err := CheckID(id); err != nil {
		return nil, Status{}, err
	}
	sb, err := readRecord(ctx, h, id)
	if err != nil {
		return nil, Status{}, err
	}
	ext, err := r.Extension(sb.Extension)
	if err != nil {
		return nil, Status{}, err
	}
	st, err := ext.Inspect(ctx, h, sb)
	return sb, st, err
}

// Destroy tears a sandbox down. A sandbox the host no longer knows is success.
// Its record comes from a read of the host's records that the destroys an
// apply makes at once share (readRecords), never from one kept: a record
// missing from an older read would be a sandbox left running.
func (r *Registry) Destroy(ctx context.Context, h *hosts.Host, id string) error {
	if err := CheckID(id); err != nil {
		return err
	}
	view, err := r.destroyReads.Do(ctx, h.Host(), func(ctx context.Context) (*hostView, error) { return readRecords(ctx, h) })
	if err != nil {
		return err
	}
	var sb *Sandbox
	if data, ok := view.records[id]; !ok {
		err = ErrNotFound
	} else {
		sb, err = decodeRecord(h, id, data, view.root)
	}
	if errors.Is(err, ErrNotFound) {
		// Gone; but a create cut off while writing its record may have
		// left the write's temporary files.
		return removeRecord(ctx, h, id)
	}
	if err != nil {
		return err
	}
	ext, err := r.Extension(sb.Extension)
	if err != nil {
		return err
	}
	return r.teardown(ctx, ext, h, sb)
}

func (r *Registry) teardown(ctx context.Context, ext Extension, h *hosts.Host, sb *Sandbox) error {
	defer r.invalidateReads(ctx, h)
	metered := sb.HourlyPriceUSD > 0 && r.ledger != nil
	if f, ok := ext.(Finisher); ok && !metered {
		// The record goes in the teardown's last command, once all else
		// went: one round trip less. (A metered sandbox's record stays
		// until its cost is debited.)
		return f.TeardownThen(ctx, h, sb, removeRecordScript(h, sb.ID))
	}
	if err := ext.Teardown(ctx, h, sb); err != nil {
		return err
	}
	if metered {
		lifetime := r.now().Sub(sb.CreatedAt)
		if err := r.ledger.Debit(sb.ID, sb.Profile, metering.Quote(sb.HourlyPriceUSD, lifetime), lifetime); err != nil {
			return fmt.Errorf("sandbox %s is gone, but debiting its cost failed (the record is kept so a retry can charge it): %w", sb.ID, err)
		}
	}
	return removeRecord(ctx, h, sb.ID)
}

// modify changes a sandbox's record on the host (an in-place update:
// labels, expiry, quote) and returns the new record.
func (r *Registry) modify(ctx context.Context, h *hosts.Host, id string, change func(*Sandbox)) (*Sandbox, error) {
	defer r.invalidateReads(ctx, h)
	sb, err := readRecord(ctx, h, id)
	if err != nil {
		return nil, err
	}
	change(sb)
	return sb, writeRecord(ctx, h, sb)
}

// Now is the registry's clock (overridable in tests).
func (r *Registry) Now() time.Time { return r.now().UTC() }
