package backends_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends/saasstub"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/catalog"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/metering"
	"github.com/sand-boxer/terraform-provider-sandboxer/internal/testharness"
)

// The registry alone holds the ledger: a create holds the quote, a ttl
// change moves the hold only after the record changed, a quote the credits
// cannot cover puts the record back, and a vanished sandbox is debited once.
// Runs on this machine's filesystem: no docker, no sshd.
func TestRegistryMetering(t *testing.T) {
	ctx := context.Background()
	h := testharness.LocalHost(t)
	ledgerPath := filepath.Join(t.TempDir(), "credits.json")
	if err := os.WriteFile(ledgerPath, []byte(`{"balance_usd": 10}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ledger, err := metering.Open(ledgerPath)
	if err != nil {
		t.Fatal(err)
	}
	reg := backends.NewRegistry(saasstub.New())
	if _, ok, _ := reg.Credits(); ok {
		t.Fatal("Credits reported a ledger before UseLedger")
	}
	profile := &catalog.Profile{Name: "profile.metered", Extension: saasstub.Name}
	if _, err := reg.Create(ctx, backends.Request{ID: "m1", Profile: profile, Host: h,
		Metered: &backends.Metering{HourlyPriceUSD: 1, QuoteUSD: 2}}); err == nil {
		t.Fatal("a metered create without a ledger succeeded")
	}
	if err := reg.UseLedger(ledgerPath); err != nil {
		t.Fatal(err)
	}
	sb, err := reg.Create(ctx, backends.Request{ID: "m1", Profile: profile, Host: h,
		Metered: &backends.Metering{HourlyPriceUSD: 1, QuoteUSD: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if avail, ok, err := reg.Credits(); err != nil || !ok || avail != 8 {
		t.Fatalf("credits after a hold of 2 = %v, %v, %v; want 8", avail, ok, err)
	}

	// A quote the credits cannot hold: refused, and the record is as before.
	if _, err := reg.Update(ctx, h, sb.ID, func(sb *backends.Sandbox) { sb.QuoteUSD, sb.TTL = 50, "50h" }); err == nil {
		t.Fatal("an update to a quote of 50 against 10 credits succeeded")
	}
	got, err := reg.Sandbox(ctx, h, sb.ID)
	if err != nil || got.QuoteUSD != 2 || got.TTL != "" {
		t.Fatalf("record after a refused update: %+v, %v; want the quote of 2 and no ttl", got, err)
	}
	if avail, _, _ := reg.Credits(); avail != 8 {
		t.Fatalf("credits after a refused update = %v; want 8", avail)
	}
	// A quote it can hold moves the hold.
	if _, err := reg.Update(ctx, h, sb.ID, func(sb *backends.Sandbox) { sb.QuoteUSD = 5 }); err != nil {
		t.Fatal(err)
	}
	if avail, _, _ := reg.Credits(); avail != 5 {
		t.Fatalf("credits after a re-quote to 5 = %v; want 5", avail)
	}
	// Gone without a destroy: the quote is debited once.
	for range 2 {
		if charged, err := reg.SettleVanished(sb.ID, profile.Name, 5, 0); err != nil || !charged {
			t.Fatalf("SettleVanished = %v, %v", charged, err)
		}
	}
	if bal, err := ledger.Balance(); err != nil || bal != 5 {
		t.Fatalf("balance after settling = %v, %v; want 5", bal, err)
	}
}

// A metered create whose cleanup fails leaves a sandbox that may remain:
// its hold stays, and its record says its price, so tearing it down later
// charges its lifetime. (Releasing the hold charged it nothing.)
func TestMeteredCreateWithFailedCleanupIsCharged(t *testing.T) {
	ctx := context.Background()
	h := testharness.LocalHost(t)
	ledgerPath := filepath.Join(t.TempDir(), "credits.json")
	if err := os.WriteFile(ledgerPath, []byte(`{"balance_usd": 10}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ext := &stepsExtension{DirWorkspace: backends.DirWorkspace{Ext: "ext.steps"}, teardownErr: errors.New("the engine did not answer"),
		steps: []backends.Step{{Name: "fail", Run: func(context.Context) error { return errors.New("the step failed") }}}}
	reg := backends.NewRegistry(ext)
	if err := reg.UseLedger(ledgerPath); err != nil {
		t.Fatal(err)
	}
	profile := &catalog.Profile{Name: "profile.metered", Extension: "ext.steps"}
	id := backends.NewID()
	_, err := reg.Create(ctx, backends.Request{ID: id, Profile: profile, Host: h, Metered: &backends.Metering{HourlyPriceUSD: 3600, QuoteUSD: 4}})
	if !errors.Is(err, backends.ErrCleanupFailed) {
		t.Fatalf("create: %v, want a failed cleanup", err)
	}
	if avail, _, _ := reg.Credits(); avail != 6 {
		t.Fatalf("credits after a create whose cleanup failed = %v; want 6: the hold of 4 stays while the sandbox may remain", avail)
	}
	ext.teardownErr = nil
	if err := reg.Destroy(ctx, h, id); err != nil {
		t.Fatal(err)
	}
	ledger, err := metering.Open(ledgerPath)
	if err != nil {
		t.Fatal(err)
	}
	if bal, err := ledger.Balance(); err != nil || bal >= 10 {
		t.Fatalf("balance after destroying it = %v, %v; want it charged for its lifetime", bal, err)
	}
}
