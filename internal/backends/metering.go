package backends

import (
	"context"
	"fmt"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/hosts"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/metering"
)

// Metering: the registry is the only holder of the credits ledger. A create
// holds the quote (Create), a destroy debits the measured lifetime
// (teardown), a ttl change moves the hold (Update), and a sandbox that left
// its host without a destroy is debited its quote (SettleVanished). Callers
// never touch the ledger, so each charge is decided in one place.

// UseLedger makes the registry charge metered sandboxes to the credits
// ledger at path. Called while the provider is configured, before any
// sandbox operation.
func (r *Registry) UseLedger(path string) error {
	l, err := metering.Open(path)
	if err != nil {
		return err
	}
	r.ledger = l
	return nil
}

// Quote is the price of a metered sandbox at hourlyUSD living for d.
func Quote(hourlyUSD float64, d time.Duration) float64 { return metering.Quote(hourlyUSD, d) }

// Credits returns what the ledger can still hold; ok is false when no
// credits_file is configured.
func (r *Registry) Credits() (available float64, ok bool, err error) {
	if r.ledger == nil {
		return 0, false, nil
	}
	available, err = r.ledger.Available()
	return available, true, err
}

// SettleVanished charges a metered sandbox that is no longer on its host
// (reaped at expiry, or removed by hand): its hold becomes a debit of the
// quote, the cost of the lifetime it was created for. It reports whether a
// charge was made; the ledger charges a sandbox once, however often this runs.
func (r *Registry) SettleVanished(id, profile string, quote float64, ttl time.Duration) (bool, error) {
	if r.ledger == nil {
		return false, nil
	}
	if err := r.ledger.Debit(id, profile, quote, ttl); err != nil {
		return false, fmt.Errorf("sandbox %s: %w", id, err)
	}
	return true, nil
}

// Update changes a sandbox's record in place (labels, expiry, quote). A
// metered sandbox's hold follows its record, never leads it: a record that
// cannot be written leaves the ledger as it was, and a new quote the credits
// no longer cover puts the record back.
func (r *Registry) Update(ctx context.Context, h *hosts.Host, id string, change func(*Sandbox)) (*Sandbox, error) {
	var prior Sandbox
	sb, err := r.modify(ctx, h, id, func(sb *Sandbox) {
		prior = *sb
		change(sb)
	})
	if err != nil || r.ledger == nil || sb.QuoteUSD == prior.QuoteUSD || sb.HourlyPriceUSD == 0 {
		return sb, err
	}
	if err := r.ledger.Hold(id, sb.Profile, sb.QuoteUSD); err != nil {
		err = fmt.Errorf("the new quote of %.2f USD: %w", sb.QuoteUSD, err)
		if _, rerr := r.modify(ctx, h, id, func(sb *Sandbox) { *sb = prior }); rerr != nil {
			err = fmt.Errorf("%w\n\nputting the host record back failed too: %v", err, rerr)
		}
		return nil, err
	}
	return sb, nil
}
