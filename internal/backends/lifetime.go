package backends

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
)

// A sandbox's lifetime: what the reaper does at its expiry (on_expiry),
// and the expiry pushed without a plan (sandboxer_extend).

// SetOnExpiry records what the reaper does once the sandbox expires
// (ExpiryStop; anything else destroys it, and is recorded as nothing).
func (sb *Sandbox) SetOnExpiry(onExpiry string) {
	sb.OnExpiry = ""
	if onExpiry == ExpiryStop {
		sb.OnExpiry = ExpiryStop
	}
}

// Extend pushes a sandbox's expiry by d, from its expiry or, when that has
// passed, from now, and returns the new record. A sandbox without a ttl
// never expires; a metered one is quoted for its ttl, so its ttl is what
// changes its lifetime.
func (r *Registry) Extend(ctx context.Context, h *hosts.Host, id string, d time.Duration) (*Sandbox, error) {
	if err := CheckID(id); err != nil {
		return nil, err
	}
	if d <= 0 {
		return nil, fmt.Errorf("extend by %s: give a positive duration", d)
	}
	defer r.invalidateReads(ctx, h)
	sb, err := readRecord(ctx, h, id)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("sandbox %s is not on host %q", id, h.Host())
	}
	if err != nil {
		return nil, err
	}
	switch {
	case sb.ExpiresAt == nil:
		return nil, fmt.Errorf("sandbox %s has no ttl, so it never expires: nothing to extend", sb.ID)
	case sb.HourlyPriceUSD > 0:
		return nil, fmt.Errorf("sandbox %s is metered and quoted for its ttl: change its ttl to extend it", sb.ID)
	}
	from := *sb.ExpiresAt
	if now := r.now().UTC(); now.After(from) {
		from = now
	}
	exp := from.Add(d).Truncate(time.Second)
	sb.ExpiresAt = &exp
	return sb, writeRecord(ctx, h, sb)
}
